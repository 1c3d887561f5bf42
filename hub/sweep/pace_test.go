package sweep

import (
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
)

// recordingQueue records Add and AddAfter; every other method panics (nil embedded interface).
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	added []string
	after map[string]time.Duration
}

func (q *recordingQueue) Add(item string) { q.added = append(q.added, item) }

func (q *recordingQueue) AddAfter(item string, d time.Duration) { q.after[item] = d }

func TestQueuePass(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		// sweptAgo is how long ago the member was last swept; 0: never.
		sweptAgo  time.Duration
		interval  time.Duration
		wantAdded bool
		wantAfter time.Duration
	}{
		{name: "never swept: at once", interval: DefaultInterval, wantAdded: true},
		{name: "swept a gap ago: at once", sweptAgo: minPassGap, interval: DefaultInterval, wantAdded: true},
		{name: "swept 3 s ago: when the gap ends", sweptAgo: 3 * time.Second, interval: DefaultInterval, wantAfter: minPassGap - 3*time.Second},
		{name: "a short interval shortens the gap", sweptAgo: time.Second, interval: 4 * time.Second, wantAfter: 3 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(t0)
			r := &Reconciler{opts: Options{Interval: tt.interval}, passes: newPasses(clk)}
			if tt.sweptAgo > 0 {
				clk.SetTime(t0.Add(-tt.sweptAgo))
				if wait := r.pace("eu"); wait != 0 {
					t.Fatalf("first pace = %v, want 0", wait)
				}
				clk.SetTime(t0)
			}
			q := &recordingQueue{after: map[string]time.Duration{}}
			queuePass(r, q, "req", "eu")
			if got := len(q.added) == 1; got != tt.wantAdded {
				t.Errorf("added at once = %v, want %v", got, tt.wantAdded)
			}
			if got := q.after["req"]; got != tt.wantAfter {
				t.Errorf("added after %v, want %v", got, tt.wantAfter)
			}
			// Queueing records no pass: the reconcile that runs it does.
			if wait := r.pace("eu"); tt.wantAdded && wait != 0 {
				t.Errorf("pace after queueing = %v, want 0 (queueing must not record a pass)", wait)
			}
		})
	}
}

func TestPace(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	r := &Reconciler{opts: Options{Interval: DefaultInterval}, passes: newPasses(clk)}
	steps := []struct {
		at   time.Duration
		name string
		want time.Duration
	}{
		{at: 0, name: "eu", want: 0},
		{at: 4 * time.Second, name: "eu", want: minPassGap - 4*time.Second},
		{at: 4 * time.Second, name: "us", want: 0},
		// The turned-away request above recorded nothing: the gap still counts from 0.
		{at: minPassGap, name: "eu", want: 0},
		{at: minPassGap + time.Second, name: "eu", want: minPassGap - time.Second},
	}
	for _, s := range steps {
		clk.SetTime(t0.Add(s.at))
		if got := r.pace(s.name); got != s.want {
			t.Errorf("at %v, pace(%s) = %v, want %v", s.at, s.name, got, s.want)
		}
	}
}
