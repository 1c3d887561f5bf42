package builder

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestHeadIngress(t *testing.T) {
	tests := []struct {
		name        string
		cluster     *rayv1.RayCluster
		wantName    string
		wantAnnots  map[string]string
		wantClass   *string
		wantBackend string
		wantPort    int32
	}{
		{
			name:        "dashboard port from the head container, class from the annotation",
			cluster:     newCluster("rc").Annotation("kubernetes.io/ingress.class", "nginx").Annotation("nginx.ingress.kubernetes.io/rewrite-target", "/$1").Obj(),
			wantName:    "rc-head-ingress",
			wantAnnots:  map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/$1"},
			wantClass:   ptr.To("nginx"),
			wantBackend: "rc-head-svc",
			wantPort:    8265,
		},
		{
			name: "custom dashboard port and head Service name",
			cluster: newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) {
				h.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "dashboard", ContainerPort: 9265}}
				h.HeadService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "custom"}}
			}).Obj(),
			wantName:    "rc-head-ingress",
			wantAnnots:  map[string]string{},
			wantBackend: "custom",
			wantPort:    9265,
		},
		{
			name:        "long names are shortened from the front",
			cluster:     newCluster(strings.Repeat("c", 45)).Obj(),
			wantName:    strings.Repeat("c", 37) + "-head-ingress",
			wantAnnots:  map[string]string{},
			wantBackend: strings.Repeat("c", 45) + "-head-svc",
			wantPort:    8265,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := tt.cluster
			got, err := HeadIngress(rc)
			if err != nil {
				t.Fatal(err)
			}
			exact := networkingv1.PathTypeExact
			want := &networkingv1.Ingress{
				ObjectMeta: metav1.ObjectMeta{
					Name: tt.wantName, Namespace: "ns", Annotations: tt.wantAnnots,
					Labels: map[string]string{labels.Cluster: rc.Name, labels.Identifier: rc.Name + "-head",
						labels.AppName: "kuberay", labels.CreatedBy: "kuberay-operator"},
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))},
				},
				Spec: networkingv1.IngressSpec{
					IngressClassName: tt.wantClass,
					Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
						Paths: []networkingv1.HTTPIngressPath{{
							Path: "/" + rc.Name + "/(.*)", PathType: &exact,
							Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
								Name: tt.wantBackend, Port: networkingv1.ServiceBackendPort{Number: tt.wantPort},
							}},
						}},
					}}}},
				},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Ingress (-want +got):\n%s", diff)
			}
		})
	}
	if IngressEnabled(newCluster("rc").Obj()) {
		t.Errorf("IngressEnabled without enableIngress")
	}
	if !IngressEnabled(newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) { h.EnableIngress = ptr.To(true) }).Obj()) {
		t.Errorf("IngressEnabled is false with enableIngress: true")
	}
}
