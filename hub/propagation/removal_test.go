package propagation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToRemove(t *testing.T) {
	tests := []struct {
		name        string
		placed      []string
		holding     []string
		unreachable map[string]bool
		want        []string
	}{
		{name: "nothing held"},
		{name: "every copy placed", placed: []string{"m1", "m2"}, holding: []string{"m2", "m1"}},
		{name: "moved off a cluster", placed: []string{"m2"}, holding: []string{"m1", "m2"}, want: []string{"m1"}},
		{
			name:        "placed but unreachable is kept",
			placed:      []string{"m1", "m2"},
			holding:     []string{"m1", "m2"},
			unreachable: map[string]bool{"m1": true},
		},
		{
			name:        "unplaced and unreachable waits until reachable",
			placed:      []string{"m2"},
			holding:     []string{"m1", "m2", "m3"},
			unreachable: map[string]bool{"m1": true},
			want:        []string{"m3"},
		},
		{
			name:        "the same cluster once reachable again",
			placed:      []string{"m2"},
			holding:     []string{"m1", "m2", "m3"},
			unreachable: map[string]bool{"m1": false},
			want:        []string{"m1", "m3"},
		},
		{
			name:    "placement emptied removes every copy, sorted, once",
			holding: []string{"m3", "m1", "m3", ""},
			want:    []string{"m1", "m3"},
		},
		{
			name:        "unreachable clusters holding nothing change nothing",
			placed:      []string{"m1"},
			holding:     []string{"m1"},
			unreachable: map[string]bool{"m4": true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ToRemove(tc.placed, tc.holding, tc.unreachable)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ToRemove (-want +got):\n%s", diff)
			}
		})
	}
}
