// Package rollout is the hub's pure rollout planner: given one hub RayService's fleet (the
// placed clusters, the revision each runs and whether it is done on it, the binding's recorded
// rollout status and per-cluster phases, the pause and approval annotations and the time), Plan
// decides which revision each cluster gets now, the new rollout status, the RolloutProgressing
// and RolloutPaused conditions, the Events to record and when time alone will change the
// answer. It keeps no state of its own: everything it remembers is in the status it returns,
// which the hub stores on the RayServiceBinding and hands back on the next reconcile, so a
// restarted hub continues where the last one stopped.
// It imports only shared/, apimachinery, KubeRay's API types and the YAML parser the Serve
// config is read with: no client, no clock (the time is an input), nothing of spoke/ and none of
// the hub's reconcilers, so every rule is tested with plain tables.
package rollout
