//go:build e2e

package fleetray

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/internal/realnode"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// logHeadMemory logs the memory of the head containers of ns on member, now and at their peak.
func logHeadMemory(t *testing.T, f *localfleet.Fleet, member, ns string) {
	t.Helper()
	c := f.Members[member]
	var pods corev1.PodList
	if err := c.Client.List(t.Context(), &pods, client.InNamespace(ns), client.MatchingLabels{"ray.io/node-type": "head"}); err != nil {
		t.Logf("head memory on %s: %v", member, err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("head %s on %s: %s", p.Name, member, realnode.HeadMemory(c, &p))
	}
}
