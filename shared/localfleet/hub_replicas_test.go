package localfleet

import "testing"

func TestLeaderInMetrics(t *testing.T) {
	tests := []struct {
		name, text string
		want       bool
	}{
		{name: "leader", text: "# HELP leader_election_master_status x\n# TYPE leader_election_master_status gauge\nleader_election_master_status{name=\"rayfleet-hub.rayfleet.io\"} 1\n", want: true},
		{name: "standby", text: "leader_election_master_status{name=\"rayfleet-hub.rayfleet.io\"} 0\n"},
		{name: "no leader election", text: "workqueue_depth{name=\"x\"} 1\n"},
		{name: "another metric of the same prefix", text: "leader_election_master_status_total 1\n"},
		{name: "empty", text: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := leaderInMetrics(tt.text); got != tt.want {
				t.Errorf("leaderInMetrics(%q) = %v, want %v", tt.text, got, tt.want)
			}
		})
	}
}

func TestHubReplicas(t *testing.T) {
	o, err := withDefaults(Options{})
	if err != nil || o.HubReplicas != 1 {
		t.Errorf("default hub replicas: %d, %v; want 1", o.HubReplicas, err)
	}
	if o, err = withDefaults(Options{HubReplicas: 2}); err != nil || o.HubReplicas != 2 {
		t.Errorf("hub replicas 2: %d, %v", o.HubReplicas, err)
	}
	if _, err = withDefaults(Options{HubReplicas: -1}); err == nil {
		t.Error("hub replicas -1 accepted")
	}
	for i, want := range []string{"hub", "hub-2", "hub-3"} {
		if got := hubReplicaName(i); got != want {
			t.Errorf("hubReplicaName(%d) = %q, want %q", i, got, want)
		}
	}
}
