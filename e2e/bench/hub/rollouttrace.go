package main

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// rolloutTrace is one rollout as the RayServiceBinding's status told it: the revision it left,
// the one it went to, when each cluster was first seen in each phase, and when it completed.
type rolloutTrace struct {
	// from is the binding's target revision before the change ("" for the first placement).
	from string
	// target is the first target revision seen other than from.
	target string
	// first holds, per cluster, when it was first seen in each rollout phase for target.
	first map[string]map[fleetv1alpha1.ClusterRolloutPhase]time.Time
	// completeAt is when the binding was first seen Complete with goodRevision == target.
	completeAt time.Time
	// stalled is the rollout's message when it was seen Stalled instead.
	stalled string
	// done is closed on Complete or Stalled.
	done chan struct{}
}

// rolloutWatch feeds the binding's updates to the rollout being measured.
type rolloutWatch struct {
	mu  sync.Mutex
	cur *rolloutTrace
}

// begin starts tracing a rollout away from the target revision from; the previous trace, if
// any, is no longer updated.
func (w *rolloutWatch) begin(from string) *rolloutTrace {
	tr := &rolloutTrace{from: from, first: map[string]map[fleetv1alpha1.ClusterRolloutPhase]time.Time{}, done: make(chan struct{})}
	w.mu.Lock()
	w.cur = tr
	w.mu.Unlock()
	return tr
}

// snapshot copies tr under the lock that observe holds, so that it can be read while the
// informer still delivers updates.
func (w *rolloutWatch) snapshot(tr *rolloutTrace) rolloutTrace {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := *tr
	out.first = make(map[string]map[fleetv1alpha1.ClusterRolloutPhase]time.Time, len(tr.first))
	for c, phases := range tr.first {
		out.first[c] = maps.Clone(phases)
	}
	return out
}

// observe records what binding b, seen at at, says about the current rollout. A status whose
// target is still the old revision says nothing about the new one and is skipped.
func (w *rolloutWatch) observe(b *fleetv1alpha1.RayServiceBinding, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	tr := w.cur
	ro := b.Status.Rollout
	if tr == nil || ro == nil || ro.TargetRevision == "" || ro.TargetRevision == tr.from {
		return
	}
	select {
	case <-tr.done:
		return
	default:
	}
	if tr.target != ro.TargetRevision {
		// Only one change is made per rollout, so a second new target would be the hub's
		// own doing; start its phases afresh so they describe the revision that completes.
		tr.target = ro.TargetRevision
		tr.first = map[string]map[fleetv1alpha1.ClusterRolloutPhase]time.Time{}
	}
	for i := range b.Status.Clusters {
		cs := &b.Status.Clusters[i]
		if cs.RolloutPhase == "" {
			continue
		}
		phases := tr.first[cs.Name]
		if phases == nil {
			phases = map[fleetv1alpha1.ClusterRolloutPhase]time.Time{}
			tr.first[cs.Name] = phases
		}
		if _, seen := phases[cs.RolloutPhase]; !seen {
			phases[cs.RolloutPhase] = at
		}
	}
	switch {
	case ro.Phase == fleetv1alpha1.RolloutComplete && ro.GoodRevision == ro.TargetRevision:
		tr.completeAt = at
		close(tr.done)
	case ro.Phase == fleetv1alpha1.RolloutStalled:
		tr.stalled = ro.Message
		close(tr.done)
	}
}

// watchBindings starts an informer on the RayServiceBindings of benchNamespace on the hub that
// feeds w; it returns once the informer has synced.
func watchBindings(ctx context.Context, hub *localcluster.Cluster, w *rolloutWatch) error {
	ca, err := cache.New(hub.Config, cache.Options{
		Scheme:            localcluster.Scheme,
		DefaultNamespaces: map[string]cache.Config{benchNamespace: {}},
	})
	if err != nil {
		return fmt.Errorf("creating RayServiceBinding cache on the hub: %w", err)
	}
	inf, err := ca.GetInformer(ctx, &fleetv1alpha1.RayServiceBinding{})
	if err != nil {
		return fmt.Errorf("getting RayServiceBinding informer on the hub: %w", err)
	}
	handle := func(obj any) {
		if b, ok := obj.(*fleetv1alpha1.RayServiceBinding); ok {
			w.observe(b, time.Now())
		}
	}
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		return fmt.Errorf("watching RayServiceBindings on the hub: %w", err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return fmt.Errorf("RayServiceBinding cache on the hub did not sync")
	}
	return nil
}
