// Package hub is the root of RayFleet's hub controllers, which bin/hub runs on the hub
// cluster, one concern per package beneath it: membership (each MemberCluster's Joined,
// Reachable, AgentReady and Ready), policy (each PlacementPolicy's Accepted condition),
// revision (a RayService's revisions as ControllerRevisions), sweep (deleting this hub's member
// copies nothing on the hub accounts for) and fleet (the hub RayService reconciler, moves,
// failover, rollouts and deletion included), which executes the pure decisions of placement
// (which members), rollout (which revision each member gets now, blue/green steps and traffic
// weights), propagation (the member copy, drift, what happens to a copy the RayService left)
// and aggregate (member status into the RayServiceBinding and the hub RayService), and writes
// the route of traffic (an HTTPRoute and its backends in the traffic cluster, built purely,
// its acceptance read back), judging each backend by both views: the control plane's and
// dataplane's probes of the members' serve addresses from the hub.
// They import one another and shared/, never spoke/, cmd/, shared/localfleet or (outside tests)
// shared/testing; placement, rollout, propagation and aggregate make no API calls.
package hub
