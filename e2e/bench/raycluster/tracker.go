package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rayfleet/rayfleet/e2e/localcluster"
)

// readyTracker records when each RayCluster was created and when it was first seen ready.
type readyTracker struct {
	want    int
	mu      sync.Mutex
	created map[string]time.Time
	ready   map[string]time.Time
	pods    *podStages
	allDone chan struct{}
}

func newReadyTracker(want int) *readyTracker {
	return &readyTracker{
		want:    want,
		created: map[string]time.Time{},
		ready:   map[string]time.Time{},
		pods:    newPodStages(),
		allDone: make(chan struct{}),
	}
}

// watch starts an informer on RayClusters in ns that feeds the tracker; it returns once the
// informer has synced.
func (t *readyTracker) watch(ctx context.Context, cfg *rest.Config, ns string) error {
	c, err := cache.New(cfg, cache.Options{
		Scheme:            localcluster.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
	})
	if err != nil {
		return fmt.Errorf("creating RayCluster cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, &rayv1.RayCluster{})
	if err != nil {
		return fmt.Errorf("getting RayCluster informer: %w", err)
	}
	observe := func(obj any) {
		if rc, ok := obj.(*rayv1.RayCluster); ok && rc.Status.State == rayv1.Ready {
			t.markReady(rc.Name, time.Now())
		}
	}
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return fmt.Errorf("watching RayClusters: %w", err)
	}
	podInf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return fmt.Errorf("getting Pod informer: %w", err)
	}
	observePod := func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			t.pods.observe(pod, time.Now())
		}
	}
	if _, err = podInf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observePod,
		UpdateFunc: func(_, obj any) { observePod(obj) },
	}); err != nil {
		return fmt.Errorf("watching Pods: %w", err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("RayCluster cache did not sync")
	}
	return nil
}

func (t *readyTracker) markCreated(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.created[name] = at
}

func (t *readyTracker) markReady(name string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, seen := t.ready[name]; seen {
		return
	}
	t.ready[name] = at
	if len(t.ready) == t.want {
		close(t.allDone)
	}
}

// latencies returns, sorted, creation-to-ready durations of the clusters seen ready, and the
// time the last of them turned ready.
func (t *readyTracker) latencies() ([]time.Duration, time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []time.Duration
	var last time.Time
	for name, r := range t.ready {
		c, ok := t.created[name]
		if !ok {
			continue
		}
		out = append(out, r.Sub(c))
		if r.After(last) {
			last = r
		}
	}
	sortDurations(out)
	return out, last
}

// stages returns the per-stage durations since creation (see podStages).
func (t *readyTracker) stages() [numStages][]time.Duration {
	t.mu.Lock()
	created := make(map[string]time.Time, len(t.created))
	for k, v := range t.created {
		created[k] = v
	}
	t.mu.Unlock()
	return t.pods.sinceCreation(created)
}

func sortDurations(d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
}

func (t *readyTracker) readyCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ready)
}

// percentile returns the q-th quantile (0..1) of sorted durations by nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999) - 1
	i = max(0, min(i, len(sorted)-1))
	return sorted[i]
}
