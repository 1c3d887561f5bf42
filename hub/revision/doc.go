// Package revision owns the history of a hub RayService: each revision is the RayService's spec
// together with the PlacementPolicy overrides in effect, stored as an apps/v1
// ControllerRevision in the RayService's namespace and controlled by it, the way StatefulSets
// and DaemonSets keep theirs (so `kubectl get controllerrevisions` lists them). A change to
// either the spec or the overrides is a new revision; going back to an earlier content reuses
// that content's revision.
//
// The pure parts (Content, Hash, Name, New, Decode, History, Prune) decide; List, Ensure and
// Delete are the executor's calls, each taking its client so that the hub's RayService
// reconciler (hub/fleet) and the CLI call them from their own steps.
//
// Of the repository it imports shared/ and hub/propagation (for the hub's one hash scheme),
// nothing of spoke/ or cmd/, and no hub reconciler package: hub/fleet imports it, never the
// reverse.
package revision
