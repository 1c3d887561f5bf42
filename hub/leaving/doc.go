// Package leaving decides what happens to the copies on leaving clusters. A leaving cluster is
// one the RayService is no longer placed on whose copy is still there (or could not be read
// to tell): it leaves as FailedOver when its member was not Ready as it left, as Moved
// otherwise, or for the reason a BlueGreen rollout gave. Its copy goes only once every placed
// cluster is done, and after a failover as the policy's purge mode says (propagation.ForLeaving).
//
// The package is pure: the caller gathers the facts of each cluster into an Input, and gets
// back values it carries out and records.
package leaving
