package main

import (
	"context"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/internal/spokebench"
)

// watchReady starts an informer on RayServices in ns that marks each one ready in tracker the
// first time its Ready condition is True; it returns once the informer has synced.
func watchReady(ctx context.Context, cfg *rest.Config, ns string, tracker *benchutil.Readiness) error {
	return spokebench.Informers(ctx, cfg, ns, spokebench.Watch{Object: &rayv1.RayService{}, Kind: "RayService", Observe: func(obj any) {
		rs, ok := obj.(*rayv1.RayService)
		if ok && meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady)) {
			tracker.MarkReady(rs.Name, time.Now())
		}
	}})
}
