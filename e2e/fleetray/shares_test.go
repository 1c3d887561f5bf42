//go:build e2e

package fleetray

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// Checking the answers against the green shares: a share counts from shareSettle after the
// gateway accepted it (Traefik applies a route a moment after the hub sees it accepted), for
// a step with at least shareMinAnswers answers after that (fewer when the machine is so loaded
// that answers take seconds, and then the settle time is not enough either), within
// shareTolerance of the share.
const (
	shareSettle     = 2 * time.Second
	shareMinAnswers = 40
	shareTolerance  = 0.15
)

// shareStep is a green share the gateway accepted, from when until the next one.
type shareStep struct {
	percent  int32
	from, to time.Time
}

// shareRecorder records the green shares of a blue/green, polling the binding.
type shareRecorder struct {
	mu     sync.Mutex
	steps  []shareStep
	cancel context.CancelFunc
	done   chan struct{}
}

// recordShares starts recording the accepted green shares of ns/name's blue/green.
func recordShares(t *testing.T, f *localfleet.Fleet, ns, name string) *shareRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &shareRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(poll / 5)
		defer tick.Stop()
		for {
			var b fleetv1alpha1.RayServiceBinding
			if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err == nil {
				r.observe(b.Status.Rollout, time.Now())
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() { r.stop() })
	return r
}

// observe records a new step when the gateway accepted a share other than the last one, and
// ends the last step when the blue/green is over.
func (r *shareRecorder) observe(ro *fleetv1alpha1.RolloutStatus, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last *shareStep
	if n := len(r.steps); n > 0 && r.steps[n-1].to.IsZero() {
		last = &r.steps[n-1]
	}
	if ro == nil || ro.BlueGreen == nil {
		if last != nil {
			last.to = now
		}
		return
	}
	bg := ro.BlueGreen
	if !bg.Accepted || (last != nil && last.percent == bg.GreenPercent) {
		return
	}
	from := now
	if bg.StepTime != nil && bg.StepTime.Time.Before(now) {
		from = bg.StepTime.Time
	}
	if last != nil {
		last.to = from
	}
	r.steps = append(r.steps, shareStep{percent: bg.GreenPercent, from: from})
}

// stop stops recording and returns the steps, the last one ended now if still open.
func (r *shareRecorder) stop() []shareStep {
	r.cancel()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.steps); n > 0 && r.steps[n-1].to.IsZero() {
		r.steps[n-1].to = time.Now()
	}
	return append([]shareStep(nil), r.steps...)
}

// checkShares checks that in every step with enough answers, green answered its share of the
// requests (failed ones left out), and logs each step's figures.
func checkShares(t *testing.T, steps []shareStep, req *requester, green string) {
	t.Helper()
	for _, s := range steps {
		from := s.from.Add(shareSettle)
		var answered, fromGreen int
		for _, a := range req.Between(from, s.to) {
			if a.Failed() {
				continue
			}
			answered++
			if a.Value.cluster == green {
				fromGreen++
			}
		}
		if answered < shareMinAnswers {
			t.Logf("green %d%% held %s: %d of %d answers from green, too few to judge", s.percent,
				s.to.Sub(s.from).Round(100*time.Millisecond), fromGreen, answered)
			continue
		}
		share := float64(fromGreen) / float64(answered)
		t.Logf("green %d%% held %s: %d of %d answers from green (%.0f%%)", s.percent,
			s.to.Sub(s.from).Round(100*time.Millisecond), fromGreen, answered, 100*share)
		if math.Abs(share-float64(s.percent)/100) > shareTolerance {
			t.Errorf("green %d%%: green answered %.0f%% of %d requests", s.percent, 100*share, answered)
		}
	}
}
