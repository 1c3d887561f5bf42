package chaos

// GatewayRows are the rows e2e/bluegreen and e2e/fleetray measure: they need a Gateway and
// Traefik (and e2e/fleetray real Ray), which this package's fleets do not run. `make chaos` runs
// their tests (at full length) before this package's and passes their output in
// RAYFLEET_CHAOS_TEST_LOG; the texts here describe what those tests do, and the figures are
// their FIGURE lines' values.
var GatewayRows = []TestRow{
	{
		Order:    8,
		Scenario: "partition between hub and member",
		Package:  "e2e/bluegreen",
		Test:     "TestPartitionKeepsServingMember",
		Figure:   "partition",
		Done: "a RayService on 2 of 3 members (no rollout; failover toleration {toleration}), a request every 20 ms " +
			"through Traefik; the proxy the hub reaches one member's API server through (shared/localfleet/partition) " +
			"accepts and holds every connection and forwards nothing, in either direction, for {partition}, while the " +
			"member, its spoke and its serve endpoint run on; then it forwards again. Then the member is partitioned " +
			"again, its serve endpoint failing too (503), until the RayService has failed over and 15s more; then " +
			"both are healed",
		Checked: "the hub finds the member not Ready; past its failover toleration it stays placed (its serve endpoint " +
			"answers the hub's probe) and TrafficShifting says it keeps its traffic; the route keeps both members at " +
			"50 % from before the partition to after the heal; the partitioned member answers 0.5 ± 0.1 of the " +
			"requests during the partition; 0 failed requests; checked every second during the partition and for 10s " +
			"after the member is Ready again: the same two members placed, none leaving, no copy on the third member, " +
			"every copy and RayCluster on both members with its UID (and each copy its generation). Partitioned " +
			"again with its endpoint failing: the RayService fails over to the third member (the partitioned one " +
			"leaving as FailedOver); the partitioned member's copy and RayClusters keep their UIDs, none deleted, while " +
			"the hub cannot see it; healed, the copy is deleted (a Purged event, the binding forgets the member) no " +
			"earlier than the hub finds the member Ready again",
		Figures: []Label{
			{Key: "victim", Name: "partitioned member"},
			{Key: "detect_not_ready", Name: "detect (partition → not Ready on the hub)"},
			{Key: "partition", Name: "partition"},
			{Key: "recover_ready", Name: "recover (heal → Ready on the hub, at the next membership probe)"},
			{Key: "route_changes", Name: "route changes"},
			{Key: "requests", Name: "requests"},
			{Key: "requests_during", Name: "requests during the partition"},
			{Key: "victim_share_during", Name: "share of those the partitioned member answered"},
			{Key: "failed", Name: "failed"},
			{Key: "failover_after_endpoint_failed", Name: "second partition: endpoint failed → replacement Ready"},
			{Key: "purged_after_ready", Name: "Ready on the hub again → copy deleted"},
		},
	},
	{
		Order:    10,
		Scenario: "green's serve endpoint killed mid-shift",
		Package:  "e2e/bluegreen",
		Test:     "TestBlueGreenGreenEndpointFails",
		Figure:   "bluegreen-greenfail",
		Done: "blue/green (step 25 % every 10 s, progress deadline {deadline}) with a request every 20 ms through " +
			"Traefik; at 25 % green's serve endpoint answers 503 to everything (the hub's probe included) while its " +
			"API server and spoke run; healed once the shift paused; failed again until the revert, then healed",
		Checked: "the hub writes a route without green within 10 s; TrafficShifting `ShiftPaused` names green's " +
			"failing endpoint; healed, green's share comes back; failing past the deadline the shift reverts " +
			"(revision failed, green unplaced) no earlier than the deadline, and green healed after gets nothing " +
			"back; requests fail only in the windows [failure, Traefik routing without green (read from its API) + 0.3 s], " +
			"each with the fault's 503; blue's copy keeps its UID",
		Figures: []Label{
			{Key: "detect_route_written", Name: "detect (failure → route without green written)"},
			{Key: "detect_route_accepted", Name: "failure → that route accepted"},
			{Key: "window", Name: "failure window"},
			{Key: "last_failure_after_kill", Name: "last failed request after the failure"},
			{Key: "recover_share_accepted", Name: "recover (heal → route with green's share accepted)"},
			{Key: "detect2_route_written", Name: "second failure: route without green written"},
			{Key: "detect2_route_accepted", Name: "second failure: route accepted"},
			{Key: "window2", Name: "second failure window"},
			{Key: "last_failure2_after_kill", Name: "second failure: last failed request"},
			{Key: "kill2_to_reverted", Name: "second failure → reverted"},
			{Key: "requests", Name: "requests"},
			{Key: "failed_in_windows", Name: "failed in the windows"},
			{Key: "failed_outside", Name: "failed outside them"},
		},
	},
	{
		Order:    11,
		Scenario: "green's Ray head killed mid-shift (real Ray)",
		Package:  "e2e/fleetray",
		Test:     "TestGreenFailsOnRealRay",
		Figure:   "fleetray-greenfail",
		Done: "a RayService running Ray 2.52 on real Nodes (kubelet, containerd, runc), blue/green onto the other " +
			"member (step 50 % every 10 s) with a request every 20 ms through Traefik; once Traefik routes the split, " +
			"green's Ray head is killed (SIGKILL to its container) while green's API server and spoke run on",
		Checked: "Traefik routes without green within 20 s (read from its API); TrafficShifting `ShiftPaused` names " +
			"green (its failing endpoint, or its copy without serve endpoints, whichever the hub learns first); the kubelet restarts the head, the spoke submits the Serve config again, and " +
			"green gets its share back and the shift completes; requests fail only in the window [kill, Traefik " +
			"routing without green + 0.3 s]; both copies keep their UIDs",
		Figures: []Label{
			{Key: "off_routed", Name: "detect (kill → Traefik routing without green)"},
			{Key: "paused_seen", Name: "kill → ShiftPaused seen"},
			{Key: "share_back", Name: "recover (kill → green's share routed again)"},
			{Key: "shift_done", Name: "change → blue/green done"},
			{Key: "requests", Name: "requests"},
			{Key: "failed_in_window", Name: "failed in the window"},
			{Key: "window", Name: "window"},
			{Key: "failed_outside", Name: "failed outside it"},
		},
	},
}

// Notes follow the table: what rows 8 and 10 leave to other tests.
const Notes = `## Beyond the table

- Row 8's member stays placed past its failover toleration only because the hub's probe finds
  its serve endpoint answering (the binding's Placed message says so). ` + "`make e2e`" + ` runs the row
  with a 30 s partition and without its second one, for time.
- A partition during a blue/green shift is checked by e2e/bluegreen's ` + "`TestBlueGreenTraffic`" + `, not
  measured here: its second rollout partitions green at 25 % until the shift is seen paused, then
  heals it; the shift resumes and finishes with no failed request.
`
