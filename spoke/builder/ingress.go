package builder

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// ingressClassAnnotation is the deprecated class annotation; KubeRay moves it to spec.ingressClassName.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// IngressEnabled reports whether spec.headGroupSpec.enableIngress asks for the dashboard Ingress.
func IngressEnabled(rc *rayv1.RayCluster) bool {
	return rc.Spec.HeadGroupSpec.EnableIngress != nil && *rc.Spec.HeadGroupSpec.EnableIngress
}

// HeadIngress builds the Ingress exposing the head's dashboard under /<cluster>/. Every RayCluster
// annotation is copied onto it, which is how users configure their ingress controller; the
// ingress-class annotation becomes spec.ingressClassName instead.
func HeadIngress(rc *rayv1.RayCluster) (*networkingv1.Ingress, error) {
	svcName, err := HeadServiceName(rc)
	if err != nil {
		return nil, err
	}
	dashboard := int32(defaultDashboardPort)
	for _, p := range headPorts(rc) {
		if p.name == dashboardPortName {
			dashboard = p.port
		}
	}
	annotations := map[string]string{}
	for k, v := range rc.Annotations {
		if k != ingressClassAnnotation {
			annotations[k] = v
		}
	}
	l := ownedLabels(rc)
	l[labels.Identifier] = identifier(rc.Name, rayv1.HeadNode)
	meta := ownedMeta(rc, IngressName(rc), l)
	meta.Annotations = annotations
	pathType := networkingv1.PathTypeExact
	ing := &networkingv1.Ingress{
		ObjectMeta: meta,
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{{
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{
						Path:     "/" + rc.Name + "/(.*)",
						PathType: &pathType,
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
							Name: svcName,
							Port: networkingv1.ServiceBackendPort{Number: dashboard},
						}},
					}},
				}},
			}},
		},
	}
	if class, ok := rc.Annotations[ingressClassAnnotation]; ok {
		ing.Spec.IngressClassName = &class
	}
	return ing, nil
}
