package main

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestOriginRequest(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   []reconcile.Request
	}{
		{name: "a copy made by the hub maps to its hub RayService", labels: map[string]string{
			labels.OriginNamespace: "team", labels.OriginName: "svc", labels.OriginUID: "u",
		}, want: []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "team", Name: "svc"}}}},
		{name: "a foreign RayService maps to nothing", labels: map[string]string{"app": "x"}},
		{name: "half an origin maps to nothing", labels: map[string]string{labels.OriginName: "svc"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: "member-ns", Name: "svc", Labels: tt.labels}}
			if diff := cmp.Diff(tt.want, originRequest(context.Background(), rs)); diff != "" {
				t.Errorf("originRequest() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
