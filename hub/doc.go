// Package hub will hold RayFleet's hub controllers (membership, placement, propagation,
// aggregation, rollout and failover), one package per concern beneath it. They land with later
// issues; see ARCHITECTURE.md for the design.
package hub
