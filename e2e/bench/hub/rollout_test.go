package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// binding is a RayServiceBinding whose status says rollout and, per cluster "name=phase", the
// clusters' rollout phases.
func binding(rollout *fleetv1alpha1.RolloutStatus, clusters ...string) *fleetv1alpha1.RayServiceBinding {
	b := &fleetv1alpha1.RayServiceBinding{}
	b.Status.Rollout = rollout
	for _, c := range clusters {
		name, phase, _ := strings.Cut(c, "=")
		b.Status.Clusters = append(b.Status.Clusters, fleetv1alpha1.ClusterStatus{
			Name: name, RolloutPhase: fleetv1alpha1.ClusterRolloutPhase(phase),
		})
	}
	return b
}

func status(target, good string, phase fleetv1alpha1.RolloutPhase) *fleetv1alpha1.RolloutStatus {
	return &fleetv1alpha1.RolloutStatus{TargetRevision: target, GoodRevision: good, Phase: phase, Message: "msg"}
}

func TestRolloutWatchObserve(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	type phases = map[string]map[fleetv1alpha1.ClusterRolloutPhase]time.Time
	tests := []struct {
		name        string
		from        string
		seen        []*fleetv1alpha1.RayServiceBinding // seen at t0+1s, t0+2s, …
		wantTarget  string
		wantFirst   phases
		wantDone    bool
		wantAt      time.Time
		wantStalled string
	}{
		{
			name: "the old target, even Complete, says nothing",
			from: "svc-old",
			seen: []*fleetv1alpha1.RayServiceBinding{
				binding(nil),
				binding(status("svc-old", "svc-old", fleetv1alpha1.RolloutComplete), "m1=Done"),
			},
			wantFirst: phases{},
		},
		{
			name: "phases are kept from their first sighting, Complete on the new target ends it",
			from: "svc-old",
			seen: []*fleetv1alpha1.RayServiceBinding{
				binding(status("svc-new", "svc-old", fleetv1alpha1.RolloutProgressing), "m1=Updating", "m2=Pending"),
				binding(status("svc-new", "svc-old", fleetv1alpha1.RolloutProgressing), "m1=Updating", "m2=Pending"),
				binding(status("svc-new", "svc-old", fleetv1alpha1.RolloutProgressing), "m1=Soaking", "m2=Pending"),
				binding(status("svc-new", "svc-old", fleetv1alpha1.RolloutProgressing), "m1=Done", "m2=Updating"),
				binding(status("svc-new", "svc-new", fleetv1alpha1.RolloutComplete), "m1=Done", "m2=Done"),
				binding(status("svc-new", "svc-new", fleetv1alpha1.RolloutComplete), "m1=Done", "m2=Done"),
			},
			wantTarget: "svc-new",
			wantFirst: phases{
				"m1": {fleetv1alpha1.ClusterUpdating: at(1), fleetv1alpha1.ClusterSoaking: at(3), fleetv1alpha1.ClusterDone: at(4)},
				"m2": {fleetv1alpha1.ClusterPending: at(1), fleetv1alpha1.ClusterUpdating: at(4), fleetv1alpha1.ClusterDone: at(5)},
			},
			wantDone: true,
			wantAt:   at(5),
		},
		{
			name: "Complete with the good revision still the old one is not the end",
			from: "svc-old",
			seen: []*fleetv1alpha1.RayServiceBinding{
				binding(status("svc-new", "svc-old", fleetv1alpha1.RolloutComplete), "m1=Done"),
			},
			wantTarget: "svc-new",
			wantFirst:  phases{"m1": {fleetv1alpha1.ClusterDone: at(1)}},
		},
		{
			name: "a second new target starts the phases afresh",
			from: "svc-old",
			seen: []*fleetv1alpha1.RayServiceBinding{
				binding(status("svc-a", "svc-old", fleetv1alpha1.RolloutProgressing), "m1=Updating"),
				binding(status("svc-b", "svc-old", fleetv1alpha1.RolloutProgressing), "m1=Soaking"),
			},
			wantTarget: "svc-b",
			wantFirst:  phases{"m1": {fleetv1alpha1.ClusterSoaking: at(2)}},
		},
		{
			name: "the first placement: any target is new",
			seen: []*fleetv1alpha1.RayServiceBinding{
				binding(status("svc-1", "svc-1", fleetv1alpha1.RolloutComplete), "m1=Done"),
			},
			wantTarget: "svc-1",
			wantFirst:  phases{"m1": {fleetv1alpha1.ClusterDone: at(1)}},
			wantDone:   true,
			wantAt:     at(1),
		},
		{
			name: "Stalled ends it with the message, later updates are ignored",
			from: "svc-old",
			seen: []*fleetv1alpha1.RayServiceBinding{
				binding(status("svc-new", "svc-old", fleetv1alpha1.RolloutStalled), "m1=Failed"),
				binding(status("svc-new", "svc-new", fleetv1alpha1.RolloutComplete), "m1=Done"),
			},
			wantTarget:  "svc-new",
			wantFirst:   phases{"m1": {fleetv1alpha1.ClusterFailed: at(1)}},
			wantDone:    true,
			wantStalled: "msg",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w rolloutWatch
			w.observe(binding(status("ignored", "ignored", fleetv1alpha1.RolloutComplete)), t0) // before begin
			tr := w.begin(tt.from)
			for i, b := range tt.seen {
				w.observe(b, at(i+1))
			}
			got := w.snapshot(tr)
			if got.target != tt.wantTarget || got.stalled != tt.wantStalled || !got.completeAt.Equal(tt.wantAt) {
				t.Errorf("target %q, stalled %q, completeAt %v; want %q, %q, %v",
					got.target, got.stalled, got.completeAt, tt.wantTarget, tt.wantStalled, tt.wantAt)
			}
			if diff := cmp.Diff(tt.wantFirst, got.first); diff != "" {
				t.Errorf("first (-want +got):\n%s", diff)
			}
			select {
			case <-tr.done:
				if !tt.wantDone {
					t.Error("done closed")
				}
			default:
				if tt.wantDone {
					t.Error("done still open")
				}
			}
		})
	}
}

func TestMinMedianMax(t *testing.T) {
	s := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Second
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		want []time.Duration
	}{
		{"none", nil, s(0, 0, 0)},
		{"one", s(7), s(7, 7, 7)},
		{"odd count, unsorted", s(9, 3, 5), s(3, 5, 9)},
		{"even count: mean of the middle two", s(4, 1, 10, 2), []time.Duration{time.Second, 3 * time.Second, 10 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lo, med, hi := minMedianMax(tt.in)
			if diff := cmp.Diff(tt.want, []time.Duration{lo, med, hi}); diff != "" {
				t.Errorf("minMedianMax (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTimeline(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	tr := rolloutTrace{first: map[string]map[fleetv1alpha1.ClusterRolloutPhase]time.Time{
		"b": {fleetv1alpha1.ClusterUpdating: at(100), fleetv1alpha1.ClusterSoaking: at(2300), fleetv1alpha1.ClusterDone: at(12400)},
		"a": {fleetv1alpha1.ClusterPending: at(0), fleetv1alpha1.ClusterUpdating: at(12400), fleetv1alpha1.ClusterDone: at(24750)},
		"c": {fleetv1alpha1.ClusterPending: at(0)},
	}}
	// Ordered by when they started (b, a); c never started, it sorts by name among the zeros.
	want := "c - / - / -, b 0.1s / 2.3s / 12.4s, a 12.4s / - / 24.8s"
	if got := timeline(tr, start); got != want {
		t.Errorf("timeline = %q, want %q", got, want)
	}
}

func TestWriteTable(t *testing.T) {
	key := func(resource, verb string) benchutil.WriteKey {
		return benchutil.WriteKey{Resource: resource, Verb: verb}
	}
	counts := func(conflicts int, kv map[benchutil.WriteKey]int) map[string]benchutil.WriteCounts {
		return map[string]benchutil.WriteCounts{
			writeSections[0].title: {ByKey: kv, Conflicts: conflicts},
		}
	}
	runs := []rolloutRun{
		{writes: counts(1, map[benchutil.WriteKey]int{
			key("rayservicebindings/status", "patch"): 3, key("memberclusters/status", "patch"): 10,
		})},
		{writes: counts(0, map[benchutil.WriteKey]int{
			key("rayservicebindings/status", "patch"): 4, key("events", "create"): 1,
		})},
	}
	var buf bytes.Buffer
	writeTable(&buf, runs, func(r rolloutRun) map[string]benchutil.WriteCounts { return r.writes })
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		"resource verb\trun 1\trun 2\tmean",
		writeSections[0].title + "\t\t\t",
		"  memberclusters/status patch (heartbeat, not counted)\t10\t0\t5.0",
		"  rayservicebindings/status patch\t3\t4\t3.5",
		"  events create\t0\t1\t0.5",
		"  all\t3\t5\t4.0",
		"  409 conflicts / other failures\t1\t0\t0.5",
		writeSections[1].title + "\t\t\t",
		"  all\t0\t0\t0.0",
		"  409 conflicts / other failures\t0\t0\t0.0",
		writeSections[2].title + "\t\t\t",
		"  all\t0\t0\t0.0",
		"  409 conflicts / other failures\t0\t0\t0.0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("writeTable (-want +got):\n%s", diff)
	}
}

func TestRolloutAuditPolicyNamesBothAgents(t *testing.T) {
	p := rolloutAuditPolicy("Metadata")
	for _, s := range []string{"level: Metadata", `users: ["` + hubUser + `", "` + spokeUser + `"]`, "- level: None"} {
		if !strings.Contains(p, s) {
			t.Errorf("audit policy lacks %q:\n%s", s, p)
		}
	}
}
