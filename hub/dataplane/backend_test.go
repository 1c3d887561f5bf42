package dataplane

import "testing"

func TestBackendRule(t *testing.T) {
	tests := []struct {
		name string
		b    Backend
		want string
	}{
		{name: "both views see it serve", b: Backend{Probe: Serving}},
		{name: "no probe verdict: the control plane's view, serving", b: Backend{}},
		{name: "no probe verdict: the control plane's view, unreachable", b: Backend{View: "not reachable"}, want: "not reachable"},
		{name: "unreachable but answering the Probe: keeps its traffic",
			b: Backend{View: "not reachable", Probe: Serving}},
		{name: "not Ready but answering the Probe: keeps its traffic", b: Backend{View: "not Ready", Probe: Serving}},
		{name: "unreachable and failing the probe", b: Backend{View: "not reachable", Probe: Failing, ProbeErr: "timeout"},
			want: "not reachable"},
		{name: "reachable, failing the Probe: off, saying why",
			b: Backend{Probe: Failing, ProbeErr: "GET /-/healthz: 503"}, want: "serve endpoint failing: GET /-/healthz: 503"},
		{name: "unreachable, answering, but its last report had no endpoints",
			b: Backend{View: "not reachable", CopyWhy: "no serve endpoints", Probe: Serving}, want: "not reachable"},
		{name: "the member's own objection outranks the probe",
			b: Backend{CopyWhy: "serve address refused: x", Probe: Serving}, want: "serve address refused: x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.b.UnservedWhy(); got != tt.want {
				t.Errorf("UnservedWhy = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnservedWhysAllFailing(t *testing.T) {
	failing := Backend{Probe: Failing, ProbeErr: "refused"}
	got := Unserved(map[string]Backend{"eu": failing, "us": failing})
	if got["eu"] != "" || got["us"] != "" {
		t.Errorf("every backend failing the Probe: %v, want the control plane's view (both serve)", got)
	}
	got = Unserved(map[string]Backend{"eu": failing, "us": {View: "not reachable"}})
	if got["eu"] != "" || got["us"] != "not reachable" {
		t.Errorf("the only other backend unreachable: %v, want eu kept by the control plane's view", got)
	}
	got = Unserved(map[string]Backend{"eu": failing, "us": {Probe: Serving}})
	if got["eu"] != "serve endpoint failing: refused" || got["us"] != "" {
		t.Errorf("one failing, one serving: %v, want eu off", got)
	}
}
