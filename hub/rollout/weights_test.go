package rollout

import (
	"maps"
	"testing"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestWeights(t *testing.T) {
	blue := func(name string, endpoints int32) Backend {
		return Backend{Name: name, Color: fleetv1alpha1.ColorBlue, Serving: true, Endpoints: endpoints}
	}
	green := func(name string, endpoints int32) Backend {
		return Backend{Name: name, Color: fleetv1alpha1.ColorGreen, Serving: true, Endpoints: endpoints}
	}
	down := func(b Backend) Backend { b.Serving = false; return b }
	tests := []struct {
		name     string
		backends []Backend
		percent  int32
		want     map[string]int32
	}{
		{name: "no rollout: by endpoints", backends: []Backend{{Name: "us", Serving: true, Endpoints: 3}, {Name: "eu", Serving: true, Endpoints: 1}},
			want: map[string]int32{"us": 7500, "eu": 2500}},
		{name: "no rollout: a cluster not serving gets nothing", backends: []Backend{{Name: "us", Serving: true, Endpoints: 3}, {Name: "eu", Endpoints: 1}},
			want: map[string]int32{"us": 10000, "eu": 0}},
		{name: "40% green", backends: []Backend{blue("us", 2), blue("eu", 2), green("ap", 1)}, percent: 40,
			want: map[string]int32{"us": 3000, "eu": 3000, "ap": 4000}},
		{name: "0% green", backends: []Backend{blue("us", 2), green("ap", 1)}, percent: 0,
			want: map[string]int32{"us": 10000, "ap": 0}},
		{name: "100% green", backends: []Backend{blue("us", 2), green("ap", 1)}, percent: 100,
			want: map[string]int32{"us": 0, "ap": 10000}},
		{name: "a blue member down: the rest of blue takes its share", backends: []Backend{down(blue("us", 2)), blue("eu", 2), green("ap", 1)}, percent: 40,
			want: map[string]int32{"us": 0, "eu": 6000, "ap": 4000}},
		{name: "green down: blue takes everything", backends: []Backend{blue("us", 2), down(green("ap", 1))}, percent: 60,
			want: map[string]int32{"us": 10000, "ap": 0}},
		{name: "blue down: green takes everything", backends: []Backend{down(blue("us", 2)), green("ap", 1)}, percent: 20,
			want: map[string]int32{"us": 0, "ap": 10000}},
		{name: "everything down", backends: []Backend{down(blue("us", 2)), down(green("ap", 1))}, percent: 20,
			want: map[string]int32{"us": 0, "ap": 0}},
		{name: "rounding adds up to 10000, largest remainder first", backends: []Backend{blue("a", 1), blue("b", 1), blue("c", 1)},
			want: map[string]int32{"a": 3334, "b": 3333, "c": 3333}},
		{name: "zero endpoints count as one", backends: []Backend{blue("a", 0), blue("b", 0)},
			want: map[string]int32{"a": 5000, "b": 5000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Weights(tt.backends, tt.percent)
			if !maps.Equal(got, tt.want) {
				t.Errorf("Weights = %v, want %v", got, tt.want)
			}
		})
	}
}
