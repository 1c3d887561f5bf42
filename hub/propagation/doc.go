// Package propagation holds the pure decisions of the hub's propagation step: the member copy of
// a hub RayService (overrides applied, origin recorded), whose copy a member object is, whether a
// member copy drifted from what the hub would apply, and what happens on each cluster: apply,
// keep, or remove the copy of a cluster the RayService left (make-before-break, purge modes). Nothing here calls an API server; the executor that applies and deletes lives apart
// so that these decisions are tested with plain tables.
// Of the repository it imports only shared/: no client, nothing of spoke/ and none of the
// hub's reconcilers.
package propagation
