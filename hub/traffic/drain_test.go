package traffic

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOffTimes(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 500_000_000, time.UTC)
	nowT := metav1.NewTime(now.Truncate(time.Second))
	earlier := metav1.NewTime(now.Add(-time.Minute).Truncate(time.Second))
	tests := []struct {
		name string
		in   OffInput
		want map[string]metav1.Time
	}{{
		name: "route not accepted: nothing is off",
		in: OffInput{Routed: map[string]int32{"a": 100}, Recorded: map[string]*metav1.Time{"b": &earlier},
			Placed: []string{"a", "c"}, Now: now},
		want: map[string]metav1.Time{},
	}, {
		name: "a recorded off time stays while the route sends nothing",
		in:   OffInput{Accepted: true, Routed: map[string]int32{"a": 100}, Recorded: map[string]*metav1.Time{"a": nil, "b": &earlier}, Now: now},
		want: map[string]metav1.Time{"b": earlier},
	}, {
		name: "a listed cluster the route stops sending to: off from now",
		in:   OffInput{Accepted: true, Routed: map[string]int32{"a": 100}, Recorded: map[string]*metav1.Time{"b": nil}, Now: now},
		want: map[string]metav1.Time{"b": nowT},
	}, {
		name: "weight again: the recorded off time is dropped",
		in:   OffInput{Accepted: true, Routed: map[string]int32{"b": 100}, Recorded: map[string]*metav1.Time{"b": &earlier}, Now: now},
		want: map[string]metav1.Time{},
	}, {
		name: "a placed cluster neither route gives weight: off from now",
		in: OffInput{Accepted: true, Routed: map[string]int32{"a": 100}, Placed: []string{"a", "c", "d"},
			Weights: map[string]int32{"a": 50, "d": 50}, Now: now},
		want: map[string]metav1.Time{"c": nowT},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, OffTimes(tt.in)); diff != "" {
				t.Errorf("OffTimes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDraining(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	const delay = 15 * time.Second
	off := map[string]metav1.Time{"fresh": metav1.NewTime(now.Add(-delay + time.Second)), "past": metav1.NewTime(now.Add(-delay))}
	for name, want := range map[string]bool{"fresh": true, "past": false, "routed": true} {
		if got := Draining(off, name, now, delay); got != want {
			t.Errorf("Draining(%s) = %v, want %v", name, got, want)
		}
	}
}
