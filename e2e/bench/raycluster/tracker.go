package main

import (
	"context"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/internal/spokebench"
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

// watch starts informers on RayClusters and Pods in ns that feed the tracker; it returns once
// they have synced.
func (t *readyTracker) watch(ctx context.Context, cfg *rest.Config, ns string) error {
	return spokebench.Informers(ctx, cfg, ns, spokebench.Watch{Object: &rayv1.RayCluster{}, Kind: "RayCluster", Observe: func(obj any) {
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
	}}, spokebench.Watch{Object: &corev1.Pod{}, Kind: "Pod", Observe: func(obj any) {
		if pod, ok := obj.(*corev1.Pod); ok {
			t.pods.observe(pod, time.Now())
		}
	}})
}

// stages returns the per-stage durations since creation (see podStages).
func (t *readyTracker) stages() [numStages][]time.Duration {
	return t.pods.sinceCreation(t.Created())
}
