package placement

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

var bgKey = types.NamespacedName{Namespace: "ns", Name: "svc"}

// refused is how the planner rejects a member refused for why.
func refused(why string) string { return "refused this RayService: " + why }

// bgInput asks for one member per colour, each of a 6-CPU copy, at now.
func bgInput(now time.Time, ms ...*memberWrapper) Input {
	return Input{Demand: cpu("6"), Policy: Policy{Clusters: 1}, Members: members(ms...), Now: now}
}

// withGreen is in with green planned by a copy of cpus CPUs, described as what.
func withGreen(in Input, cpus, what string) Input {
	in.Green = &ColorDemand{Demand: cpu(cpus), For: what}
	return in
}

// reservedOn is an intent of key reserving a 6-CPU copy on each of names, as a plan at now.
func reservedOn(key types.NamespacedName, now time.Time, names ...string) Intent {
	in := Intent{Key: key, Demand: cpu("6"), At: now, Chosen: names, Reserve: map[string]corev1.ResourceList{}}
	for _, name := range names {
		in.Reserve[name] = cpu("8")
	}
	return in
}

func TestPlanBlueGreen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	down := func(name string) *memberWrapper {
		w := member(name, "cpu", "8").notReady("not ready")
		w.NotReadySince = now.Add(-time.Hour)
		return w
	}
	tests := []struct {
		name        string
		in          Input
		blue, green []string
		// snap is the reservations the plans start from (zero: none).
		snap       Snapshot
		wantColors Colors
		wantPlaced bool
		// wantRejects are the rejections of the joined plan; nil: not checked.
		wantRejects map[string]string
		// wantReserve are the members each intent (blue's, then green's) newly reserves.
		wantReserve [2][]string
	}{{
		name: "each colour keeps its member, the other colour refused",
		in:   bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "8"), member("c", "cpu", "8")),
		blue: []string{"a"}, green: []string{"b"},
		wantColors: Colors{Blue: []string{"a"}, Green: []string{"b"}}, wantPlaced: true,
		wantRejects: map[string]string{"a": refused(inBlue), "b": refused(inGreen)},
	}, {
		name: "green is kept by what it needs now, not by a whole copy",
		in:   withGreen(bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "2")), "2", "green at 25% of its set"),
		blue: []string{"a"}, green: []string{"b"},
		wantColors: Colors{Blue: []string{"a"}, Green: []string{"b"}}, wantPlaced: true,
	}, {
		name: "a blue member past its toleration is replaced within blue, never by green's",
		in:   bgInput(now, down("a"), member("b", "cpu", "8"), member("c", "cpu", "8")),
		blue: []string{"a"}, green: []string{"b"},
		wantColors: Colors{Blue: []string{"c"}, Green: []string{"b"}}, wantPlaced: true,
		wantRejects: map[string]string{"a": "not ready", "b": refused(inGreen), "c": refused(inBlue)},
		wantReserve: [2][]string{{"c"}},
	}, {
		name: "a member of each colour past its toleration: each replaced within its colour",
		in:   bgInput(now, down("a"), down("b"), member("c", "cpu", "8"), member("d", "cpu", "8")),
		blue: []string{"a"}, green: []string{"b"},
		wantColors:  Colors{Blue: []string{"c"}, Green: []string{"d"}},
		wantPlaced:  true,
		wantRejects: map[string]string{"a": "not ready", "b": "not ready", "c": refused(inBlue)},
		wantReserve: [2][]string{{"c"}, {"d"}},
	}, {
		name: "green short of room: the plan is partial, blue kept",
		in:   bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "8")),
		blue: []string{"a"}, green: []string{"b"},
		// Another RayService holds b now.
		snap:       Snapshot{}.With(reservedOn(types.NamespacedName{Namespace: "ns", Name: "other"}, now, "b")),
		wantColors: Colors{Blue: []string{"a"}, Green: []string{}},
	}, {
		name: "green is planned on the reservations blue's plan leaves: blue's stale one on green's member is gone",
		in:   bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "8")),
		blue: []string{"a"}, green: []string{"b"},
		// Blue reserved b before the rollout made b green; blue's plan now drops it.
		snap:        Snapshot{}.With(reservedOn(bgKey, now, "b")),
		wantColors:  Colors{Blue: []string{"a"}, Green: []string{"b"}},
		wantPlaced:  true,
		wantRejects: map[string]string{"a": refused(inBlue), "b": refused(inGreen)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, cols, intents := PlanBlueGreen(tt.snap, bgKey, tt.in, tt.blue, tt.green)
			if diff := cmp.Diff(&tt.wantColors, cols); diff != "" {
				t.Errorf("colours (-want +got):\n%s", diff)
			}
			if want := slices.Sorted(slices.Values(slices.Concat(cols.Blue, cols.Green))); !slices.Equal(d.Clusters, want) {
				t.Errorf("clusters = %v, want both colours %v", d.Clusters, want)
			}
			if d.Placed != tt.wantPlaced {
				t.Errorf("placed = %v, want %v (%s)", d.Placed, tt.wantPlaced, d.Message)
			}
			if diff := cmp.Diff(tt.wantRejects, d.Rejected); tt.wantRejects != nil && diff != "" {
				t.Errorf("rejected (-want +got):\n%s", diff)
			}
			if len(intents) != 2 || intents[0].Key != bgKey || intents[1].Key != GreenKey(bgKey) {
				t.Fatalf("intents = %+v, want blue's under %v then green's under %v", intents, bgKey, GreenKey(bgKey))
			}
			for i, want := range tt.wantReserve {
				if got := slices.Sorted(maps.Keys(intents[i].Reserve)); !slices.Equal(got, want) {
					t.Errorf("intent %d reserves %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestChooseGreen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   Input
		blue []string
		// before are the intents of the plans made earlier in the reconcile.
		before     []Intent
		wantColors Colors
		// wantIntent are the members green's intent newly reserves.
		wantIntent []string
	}{{
		name:       "green is chosen among the members that are not blue",
		in:         bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "8")),
		blue:       []string{"a"},
		wantColors: Colors{Blue: []string{"a"}, Green: []string{"b"}},
		wantIntent: []string{"b"},
	}, {
		name:       "a member blue's plan just reserved is full for green",
		in:         bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "8"), member("c", "cpu", "8")),
		blue:       []string{"a"},
		before:     []Intent{reservedOn(bgKey, now, "b")},
		wantColors: Colors{Blue: []string{"a"}, Green: []string{"c"}},
		wantIntent: []string{"c"},
	}, {
		name:       "capacity following the traffic: green needs room for its first step only",
		in:         withGreen(bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "2")), "2", "green's first step"),
		blue:       []string{"a"},
		wantColors: Colors{Blue: []string{"a"}, Green: []string{"b"}},
		wantIntent: []string{"b"},
	}, {
		name: "a member without room for green's first step says so",
		in:   withGreen(bgInput(now, member("a", "cpu", "8"), member("b", "cpu", "2")), "3", "green's first step"),
		blue: []string{"a"},
		wantColors: Colors{Blue: []string{"a"},
			NoGreen: "0/1 clusters chosen; a: " + refused(isBlue) + "; b: insufficient cpu (need 3, free 2) for green's first step"},
	}, {
		name:       "no member is left for green: why, and no green reservation",
		in:         bgInput(now, member("a", "cpu", "8")),
		blue:       []string{"a"},
		wantColors: Colors{Blue: []string{"a"}, NoGreen: "0/1 clusters chosen; a: " + refused(isBlue)},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cols, intent := ChooseGreen(Snapshot{}, bgKey, tt.in, tt.blue, tt.before)
			if diff := cmp.Diff(&tt.wantColors, cols); diff != "" {
				t.Errorf("colours (-want +got):\n%s", diff)
			}
			if intent.Key != GreenKey(bgKey) {
				t.Errorf("intent key = %v, want %v", intent.Key, GreenKey(bgKey))
			}
			if got := slices.Sorted(maps.Keys(intent.Reserve)); !slices.Equal(got, tt.wantIntent) {
				t.Errorf("intent reserves %v, want %v", got, tt.wantIntent)
			}
			if cols.Green == nil && len(intent.Chosen) > 0 {
				t.Errorf("no green set, yet the intent keeps %v", intent.Chosen)
			}
		})
	}
}

func TestColorsByName(t *testing.T) {
	var none *Colors
	if got := none.ByName(); got != nil {
		t.Errorf("no colours = %v, want nil", got)
	}
	got := (&Colors{Blue: []string{"a"}, Green: []string{"b", "c"}}).ByName()
	want := map[string]fleetv1alpha1.Color{"a": fleetv1alpha1.ColorBlue, "b": fleetv1alpha1.ColorGreen, "c": fleetv1alpha1.ColorGreen}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("by name (-want +got):\n%s", diff)
	}
}
