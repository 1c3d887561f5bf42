package raycluster

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestStatusMemo(t *testing.T) {
	cluster := func(uid types.UID, ready int32) *rayv1.RayCluster {
		return &rayv1.RayCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "ns", UID: uid},
			Status:     rayv1.RayClusterStatus{ReadyWorkerReplicas: ready},
		}
	}
	tests := []struct {
		name      string
		cached    *rayv1.RayCluster
		wantReady int32
		wantKept  bool
	}{
		{"stale cache gets the written status", cluster("a", 2), 1, true},
		{"caught-up cache drops the memory", cluster("a", 1), 1, false},
		{"a recreated cluster is another object", cluster("b", 2), 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newStatusMemo()
			m.remember(cluster("a", 1))
			m.apply(tt.cached)
			if tt.cached.Status.ReadyWorkerReplicas != tt.wantReady {
				t.Fatalf("ready = %d, want %d", tt.cached.Status.ReadyWorkerReplicas, tt.wantReady)
			}
			if _, kept := m.written[types.NamespacedName{Namespace: "ns", Name: "rc"}]; kept != tt.wantKept {
				t.Fatalf("remembered = %v, want %v", kept, tt.wantKept)
			}
		})
	}
	m := newStatusMemo()
	m.remember(cluster("a", 1))
	m.forget(types.NamespacedName{Namespace: "ns", Name: "rc"})
	if len(m.written) != 0 {
		t.Fatal("forget must drop the memory")
	}
}
