// Package hub is the root of RayFleet's hub controllers, which bin/hub runs on the hub
// cluster, one concern per package beneath it: membership (each MemberCluster's Joined,
// Reachable, AgentReady and Ready), policy (each PlacementPolicy's Accepted condition),
// revision (a RayService's revisions as ControllerRevisions) and fleet (the hub RayService
// reconciler, failover and rollouts included), which executes the pure decisions of placement
// (which members), rollout (which revision each member gets now), propagation (the member copy,
// drift, removals) and aggregate (member status into the RayServiceBinding and the hub
// RayService).
// They import one another and shared/, never spoke/, cmd/, shared/localfleet or (outside tests)
// shared/testing; placement, rollout, propagation and aggregate make no API calls.
package hub
