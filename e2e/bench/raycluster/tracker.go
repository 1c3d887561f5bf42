package main

import (
	"context"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// readyTracker records when each RayCluster was created and when it was first seen ready,
// and when its Pods reached each stage.
type readyTracker struct {
	*benchutil.Readiness
	pods *podStages
}

func newReadyTracker(want int) *readyTracker {
	return &readyTracker{Readiness: benchutil.NewReadiness(want), pods: newPodStages()}
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
		rc, ok := obj.(*rayv1.RayCluster)
		if !ok {
			return
		}
		if meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.HeadPodReady)) {
			t.pods.observeReported(rc.Name, time.Now())
		}
		if rc.Status.State == rayv1.Ready {
			t.MarkReady(rc.Name, time.Now())
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

// stages returns the per-stage durations since creation (see podStages).
func (t *readyTracker) stages() [numStages][]time.Duration {
	return t.pods.sinceCreation(t.Created())
}
