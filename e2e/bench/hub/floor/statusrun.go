package floor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/hub/simmembers"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/metapatch"
)

// statusReplay is the Writer's status floor: the RayServices placed, by "namespace/name", and
// the queue of those whose copies changed. Like the hub's workqueue, the queue folds the
// changes of one RayService waiting for a worker into one write and never hands the same
// RayService to two workers at once.
type statusReplay struct {
	once   sync.Once
	placed sync.Map
	// copiesMu guards the copies of every placed RayService.
	copiesMu sync.Mutex
	names    []string
	labels   map[string]map[string]string
	queue    workqueue.TypedRateLimitingInterface[string]
	// busy counts the workers writing; failures the writes given up on and queued again.
	busy, failures atomic.Int64
}

// remember records a RayService the placement replay placed.
func (s *statusReplay) remember(g *placedRayService) {
	s.placed.Store(g.rs.Namespace+"/"+g.rs.Name, g)
}

// statusInit sets up the status floor once: the members' names and labels, and the queue.
func (w *Writer) statusInit() *statusReplay {
	s := &w.status
	s.once.Do(func() {
		s.names = slices.Sorted(maps.Keys(w.members))
		s.labels = make(map[string]map[string]string, len(w.members))
		for name, m := range w.members {
			s.labels[name] = m.Labels
		}
		s.queue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	})
	return s
}

// ObserveCopy records a member copy as a watch of the backing member server delivered it
// (added or updated), and queues its RayService when the copy's status changed: what the
// hub's member informer and its event handler do. Copies of RayServices the replay did not
// place are ignored.
func (w *Writer) ObserveCopy(cp *rayv1.RayService) {
	s := w.statusInit()
	member, ns, ok := simmembers.MemberOf(s.names, cp.Namespace)
	if !ok {
		return
	}
	key := ns + "/" + cp.Name
	v, ok := s.placed.Load(key)
	if !ok {
		return
	}
	g := v.(*placedRayService)
	w.status.copiesMu.Lock()
	prev := g.copies[member]
	changed := prev == nil || !equality.Semantic.DeepEqual(prev.Status, cp.Status)
	if changed {
		g.copies[member] = cp
	}
	w.status.copiesMu.Unlock()
	if changed {
		s.queue.Add(key)
	}
}

// StartStatus starts writing, with workers at once until ctx ends, what the hub writes to
// show the changes ObserveCopy queues: the binding's and the hub RayService's status patches
// at once (each only when it changed) and the rollout's events, as the hub's identity. A write
// the API servers refuse is queued again with the hub's backoff (controller-runtime's default
// rate limiter) and counted in StatusFailures. It is to be called once Run has returned; the
// function it returns waits, after ctx ends, for the workers and the events in flight.
func (w *Writer) StartStatus(ctx context.Context, strategy *fleetv1alpha1.RolloutStrategy, workers int) (func(), error) {
	st, err := rollout.StrategyOf(strategy)
	if err != nil {
		return nil, fmt.Errorf("rollout strategy: %w", err)
	}
	s := w.statusInit()
	// Run closed the events of placement; these are the status path's.
	w.events = make(chan *eventsv1.Event, 1<<16)
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		w.sendEvents(ctx)
	}()
	go func() {
		<-ctx.Done()
		s.queue.ShutDown()
	}()
	var wg sync.WaitGroup
	for range max(1, workers) {
		wg.Go(func() {
			for {
				key, shutdown := s.queue.Get()
				if shutdown {
					return
				}
				s.busy.Add(1)
				if err := w.syncStatus(ctx, key, st); err != nil && ctx.Err() == nil {
					s.failures.Add(1)
					s.queue.AddRateLimited(key)
				} else {
					s.queue.Forget(key)
				}
				s.busy.Add(-1)
				s.queue.Done(key)
			}
		})
	}
	return func() {
		wg.Wait()
		close(w.events)
		<-sent
	}, nil
}

// StatusIdle reports whether no RayService waits for a status write, none is being written and
// no event waits to be sent (events already being sent are not counted).
func (w *Writer) StatusIdle() bool {
	s := w.statusInit()
	return s.queue.Len() == 0 && s.busy.Load() == 0 && len(w.events) == 0
}

// StatusFailures is how many status writes failed and were queued again.
func (w *Writer) StatusFailures() int64 { return w.status.failures.Load() }

// syncStatus decides and writes the status of the RayService key from what was placed and the
// copies seen so far.
func (w *Writer) syncStatus(ctx context.Context, key string, strategy rollout.Strategy) error {
	v, ok := w.status.placed.Load(key)
	if !ok {
		return nil
	}
	g := v.(*placedRayService)
	// The worker owns rs and binding (the queue gives a key to one worker at a time); the
	// copies are shared with ObserveCopy.
	w.status.copiesMu.Lock()
	snapshot := *g
	snapshot.copies = maps.Clone(g.copies)
	w.status.copiesMu.Unlock()
	d := decideStatus(&snapshot, strategy, w.status.labels, time.Now())
	for _, ev := range d.events {
		w.event(g.rs, ev.Cluster, ev.Type, ev.Reason, "Rollout", ev.Message)
	}
	var bindingErr, hubErr error
	var wg sync.WaitGroup
	if d.binding != nil {
		wg.Go(func() {
			b := g.binding.DeepCopy()
			b.Status = *d.binding
			if err := w.send(ctx, func() error { return metapatch.PatchStatus(ctx, w.hub, b, client.MergeFrom(g.binding)) }); err != nil {
				bindingErr = fmt.Errorf("patch RayServiceBinding %s status on the hub: %w", key, err)
				return
			}
			g.binding = b
		})
	}
	if d.hub != nil {
		wg.Go(func() {
			rs := g.rs.DeepCopy()
			rs.Status = *d.hub
			if err := w.send(ctx, func() error { return metapatch.PatchStatus(ctx, w.hub, rs, client.MergeFrom(g.rs)) }); err != nil {
				hubErr = fmt.Errorf("patch RayService %s status on the hub: %w", key, err)
				return
			}
			g.rs = rs
		})
	}
	wg.Wait()
	return errors.Join(bindingErr, hubErr)
}
