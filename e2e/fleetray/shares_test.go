//go:build e2e

package fleetray

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/internal/traefik"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/names"
)

// Checking the answers against the green shares: a share counts from when Traefik first
// routed by it (read from its API; the route's Accepted status comes earlier, by up to seconds
// on a loaded machine) plus appliedMargin, for a step with at least shareMinAnswers answers
// after that, within shareTolerance of the share.
const (
	sharePoll       = 100 * time.Millisecond
	appliedMargin   = sharePoll + 200*time.Millisecond
	shareMinAnswers = 40
	shareTolerance  = 0.15
)

// shareStep is a green share the gateway accepted: since when Traefik routed by it (zero if it
// never did), until the next share was accepted.
type shareStep struct {
	percent     int32
	green       string
	applied, to time.Time
}

// shareRecorder records the green shares of a blue/green, polling the binding and Traefik.
type shareRecorder struct {
	mu     sync.Mutex
	steps  []shareStep
	cancel context.CancelFunc
	done   chan struct{}
}

// recordShares starts recording the green shares of ns/name's blue/green.
func recordShares(t *testing.T, f *localfleet.Fleet, ns, name string) *shareRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &shareRecorder{cancel: cancel, done: make(chan struct{})}
	byBackend := backendsOf(name)
	go func() {
		defer close(r.done)
		tick := time.NewTicker(sharePoll)
		defer tick.Stop()
		for {
			var b fleetv1alpha1.RayServiceBinding
			if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err == nil {
				r.observe(b.Status.Rollout, time.Now())
			}
			if green, percent, waiting := r.waiting(); waiting {
				w, err := traefik.Applied(ctx, f.GatewayAdminURL, ns, name, byBackend)
				if err == nil && shareOf(w, green) == percent {
					r.applied(time.Now())
				}
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

// backendsOf names the member behind each backend of name's route (the members' serve
// Services, as the hub names them).
func backendsOf(name string) map[string]string {
	out := map[string]string{}
	for _, m := range members {
		out[names.Distinct(name, m)] = m
	}
	return out
}

// shareOf is member's share of weights in percent, rounded; -1 when no weight is set.
func shareOf(weights map[string]int32, member string) int32 {
	var sum int32
	for _, w := range weights {
		sum += w
	}
	if sum == 0 {
		return -1
	}
	return int32(math.Round(100 * float64(weights[member]) / float64(sum)))
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
	if !bg.Accepted || len(bg.Green) != 1 || (last != nil && last.percent == bg.GreenPercent) {
		return
	}
	if last != nil {
		last.to = now
	}
	r.steps = append(r.steps, shareStep{percent: bg.GreenPercent, green: bg.Green[0]})
}

// waiting reports the open step whose share Traefik has not been seen routing by yet.
func (r *shareRecorder) waiting() (green string, percent int32, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.steps); n > 0 && r.steps[n-1].to.IsZero() && r.steps[n-1].applied.IsZero() {
		return r.steps[n-1].green, r.steps[n-1].percent, true
	}
	return "", 0, false
}

// applied records that Traefik routes by the open step's share since now.
func (r *shareRecorder) applied(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := len(r.steps); n > 0 && r.steps[n-1].to.IsZero() {
		r.steps[n-1].applied = now
	}
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

// checkShares checks that in every step Traefik applied with enough answers after it, green
// answered its share of the requests (failed ones left out), and logs each step's figures. A
// blue/green in which no step short of 100 % could be judged fails: the split went unchecked.
func checkShares(t *testing.T, steps []shareStep, req *requester, green string) {
	t.Helper()
	judgedSplit := false
	defer func() {
		if !judgedSplit {
			t.Errorf("no green share short of 100%% was routed by Traefik for %d answers: the split was not checked", shareMinAnswers)
		}
	}()
	for _, s := range steps {
		if s.applied.IsZero() {
			t.Logf("green %d%%: Traefik was not seen routing by it before the next step", s.percent)
			continue
		}
		from := s.applied.Add(appliedMargin)
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
			t.Logf("green %d%% routed by Traefik for %s: %d of %d answers from green, too few to judge", s.percent,
				s.to.Sub(s.applied).Round(100*time.Millisecond), fromGreen, answered)
			continue
		}
		judgedSplit = judgedSplit || s.percent < 100
		share := float64(fromGreen) / float64(answered)
		t.Logf("green %d%% routed by Traefik for %s: %d of %d answers from green (%.0f%%)", s.percent,
			s.to.Sub(s.applied).Round(100*time.Millisecond), fromGreen, answered, 100*share)
		if math.Abs(share-float64(s.percent)/100) > shareTolerance {
			t.Errorf("green %d%%: green answered %.0f%% of %d requests", s.percent, 100*share, answered)
		}
	}
}
