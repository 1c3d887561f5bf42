package main

import (
	"context"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// watchReady starts an informer on RayServices in ns that marks each one ready in tracker the
// first time its Ready condition is True; it returns once the informer has synced.
func watchReady(ctx context.Context, cfg *rest.Config, ns string, tracker *benchutil.Readiness) error {
	c, err := cache.New(cfg, cache.Options{
		Scheme:            localcluster.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
	})
	if err != nil {
		return fmt.Errorf("creating RayService cache: %w", err)
	}
	inf, err := c.GetInformer(ctx, &rayv1.RayService{})
	if err != nil {
		return fmt.Errorf("getting RayService informer: %w", err)
	}
	observe := func(obj any) {
		rs, ok := obj.(*rayv1.RayService)
		if ok && meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady)) {
			tracker.MarkReady(rs.Name, time.Now())
		}
	}
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return fmt.Errorf("watching RayServices: %w", err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("RayService cache did not sync")
	}
	return nil
}
