package revision

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rev is a revision named name with number n, created at epoch plus seconds.
func rev(name string, n int64, seconds int) appsv1.ControllerRevision {
	return appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns",
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(seconds) * time.Second)),
		},
		Revision: n,
	}
}

func names(revisions []appsv1.ControllerRevision) []string {
	var out []string
	for i := range revisions {
		out = append(out, revisions[i].Name)
	}
	return out
}

func TestNewHistoryOrder(t *testing.T) {
	tests := []struct {
		name string
		in   []appsv1.ControllerRevision
		want []string
	}{
		{"empty", nil, nil},
		{"by number, not by creation", []appsv1.ControllerRevision{rev("c", 3, 0), rev("a", 1, 9), rev("b", 2, 5)}, []string{"a", "b", "c"}},
		// Two writers from stale reads may give two revisions one number.
		{"same number: older first", []appsv1.ControllerRevision{rev("x", 2, 5), rev("y", 2, 1), rev("a", 1, 0)}, []string{"a", "y", "x"}},
		{"same number and time: by name", []appsv1.ControllerRevision{rev("y", 2, 1), rev("x", 2, 1)}, []string{"x", "y"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.in)
			h := NewHistory(in)
			if got := names(h); !slices.Equal(got, tc.want) {
				t.Errorf("NewHistory order = %v, want %v", got, tc.want)
			}
			if got, want := names(in), names(tc.in); !slices.Equal(got, want) {
				t.Errorf("NewHistory reordered its argument: %v, was %v", got, want)
			}
		})
	}
}

func TestHistoryLookups(t *testing.T) {
	h := NewHistory([]appsv1.ControllerRevision{rev("c", 5, 2), rev("a", 1, 0), rev("b", 2, 1), rev("d", 5, 3)})
	tests := []struct {
		name string
		got  *appsv1.ControllerRevision
		want string // "" for nil
	}{
		{"Get", h.Get("b"), "b"},
		{"Get absent", h.Get("z"), ""},
		{"ByNumber", h.ByNumber(1), "a"},
		{"ByNumber of two: the later", h.ByNumber(5), "d"},
		{"ByNumber absent", h.ByNumber(3), ""},
		{"Latest", h.Latest(), "d"},
		{"Latest of an unsorted history", History{rev("b", 2, 0), rev("c", 3, 0), rev("a", 1, 0)}.Latest(), "c"},
		{"Latest of none", History(nil).Latest(), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if tc.got != nil {
				got = tc.got.Name
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		h    History
		want int64
	}{{nil, 1}, {h, 6}, {History{rev("b", 7, 0), rev("a", 2, 0)}, 8}} {
		if got := tc.h.NextNumber(); got != tc.want {
			t.Errorf("NextNumber of %v = %d, want %d", names(tc.h), got, tc.want)
		}
	}
}

func TestPrune(t *testing.T) {
	five := []appsv1.ControllerRevision{rev("r4", 4, 0), rev("r1", 1, 0), rev("r5", 5, 0), rev("r2", 2, 0), rev("r3", 3, 0)}
	tests := []struct {
		name  string
		in    []appsv1.ControllerRevision
		keep  []string
		limit int
		want  []string
	}{
		{"under the limit", five, nil, 10, nil},
		{"at the limit", five, nil, 5, nil},
		{"oldest first", five, nil, 3, []string{"r1", "r2"}},
		{"kept ones are skipped", five, []string{"r1", "r3"}, 3, []string{"r2", "r4"}},
		{"kept alone exceed the limit", five, []string{"r1", "r2", "r5"}, 2, []string{"r3", "r4"}},
		{"limit 0 keeps only the kept", five, []string{"r5"}, 0, []string{"r1", "r2", "r3", "r4"}},
		{"negative limit counts as 0", five, []string{"r5"}, -1, []string{"r1", "r2", "r3", "r4"}},
		{"everything kept", five, []string{"r1", "r2", "r3", "r4", "r5"}, 1, nil},
		{"empty", nil, nil, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			keep := map[string]bool{}
			for _, k := range tc.keep {
				keep[k] = true
			}
			got := Prune(tc.in, keep, tc.limit)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Prune = %v, want %v", got, tc.want)
			}
			for _, n := range got {
				if keep[n] {
					t.Errorf("Prune deletes kept %s", n)
				}
			}
		})
	}
}
