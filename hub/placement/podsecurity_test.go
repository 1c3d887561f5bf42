package placement

import (
	"testing"

	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

func (w *memberWrapper) podSecurity(level string) *memberWrapper {
	w.PodSecurityLevel = level
	return w
}

func TestPlanPodSecurity(t *testing.T) {
	cpu := rl("cpu", "1")
	privileged := podsecurity.Need{Level: podsecurity.Privileged, Breaks: map[string]string{
		podsecurity.Baseline:   `headGroupSpec: privileged (container "ray-head" must not set securityContext.privileged=true)`,
		podsecurity.Restricted: `headGroupSpec: privileged (container "ray-head" must not set securityContext.privileged=true)`,
	}}
	baseline := podsecurity.Need{Level: podsecurity.Baseline, Breaks: map[string]string{
		podsecurity.Restricted: `workerGroupSpecs[cpu]: allowPrivilegeEscalation != false (container "ray-worker" must set securityContext.allowPrivilegeEscalation=false)`,
	}}
	tests := []struct {
		name string
		in   Input
		want Decision
	}{
		{
			name: "a stricter member is skipped, with the level and the checks said",
			in: Input{Demand: cpu, Policy: BuiltInPolicy(), PodSecurity: baseline, Members: members(
				member("strict", "cpu", "64").podSecurity(podsecurity.Restricted),
				member("base", "cpu", "8").podSecurity(podsecurity.Baseline),
			)},
			want: Decision{Clusters: []string{"base"}, Placed: true, Message: "1/1 clusters chosen",
				Rejected: map[string]string{"strict": "Pod Security level restricted enforced, the Pods need baseline: " +
					`workerGroupSpecs[cpu]: allowPrivilegeEscalation != false (container "ray-worker" must set securityContext.allowPrivilegeEscalation=false)`}},
		},
		{
			name: "privileged Pods fit only a privileged member",
			in: Input{Demand: cpu, Policy: Policy{Clusters: 2}, PodSecurity: privileged, Members: members(
				member("m1", "cpu", "8").podSecurity(podsecurity.Baseline),
				member("m2", "cpu", "8").podSecurity(podsecurity.Privileged),
			)},
			want: Decision{Clusters: []string{"m2"},
				Message: `1/2 clusters chosen; m1: Pod Security level baseline enforced, the Pods need privileged: ` +
					`headGroupSpec: privileged (container "ray-head" must not set securityContext.privileged=true)`,
				Rejected: map[string]string{"m1": `Pod Security level baseline enforced, the Pods need privileged: ` +
					`headGroupSpec: privileged (container "ray-head" must not set securityContext.privileged=true)`}},
		},
		{
			name: "the member the RayService runs on keeps it",
			in: Input{Demand: cpu, Policy: BuiltInPolicy(), PodSecurity: privileged, Current: []string{"m1"},
				Members: members(member("m1", "cpu", "8").podSecurity(podsecurity.Baseline))},
			want: Decision{Clusters: []string{"m1"}, Placed: true, Message: "1/1 clusters chosen"},
		},
		{
			name: "a member reporting no level and an unjudged RayService are not filtered",
			in: Input{Demand: cpu, Policy: Policy{Clusters: 2}, PodSecurity: privileged, Members: members(
				member("old", "cpu", "8"),
				member("m2", "cpu", "8").podSecurity(podsecurity.Privileged),
			)},
			want: Decision{Clusters: []string{"m2", "old"}, Placed: true, Message: "2/2 clusters chosen"},
		},
		{
			name: "nothing needed: every level fits",
			in: Input{Demand: cpu, Policy: BuiltInPolicy(),
				Members: members(member("m1", "cpu", "8").podSecurity(podsecurity.Restricted))},
			want: Decision{Clusters: []string{"m1"}, Placed: true, Message: "1/1 clusters chosen"},
		},
		{
			name: "an unknown level admits nothing",
			in: Input{Demand: cpu, Policy: BuiltInPolicy(), PodSecurity: podsecurity.Need{Level: podsecurity.Restricted},
				Members: members(member("m1", "cpu", "8").podSecurity("strict"))},
			want: Decision{Message: "0/1 clusters chosen; m1: Pod Security level strict enforced, the Pods need restricted",
				Rejected: map[string]string{"m1": "Pod Security level strict enforced, the Pods need restricted"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := diffDecision(tt.want, Plan(tt.in)); diff != "" {
				t.Errorf("Plan (-want +got):\n%s", diff)
			}
		})
	}
}
