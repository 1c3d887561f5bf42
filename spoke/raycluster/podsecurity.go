package raycluster

import (
	"context"
	"errors"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/podsecurity"
)

// reasonForbiddenByPodSecurity is the event of a Pod the spoke refused to create. KubeRay has no
// such event: it leaves the refusal to the API server's admission.
const reasonForbiddenByPodSecurity = "ForbiddenByPodSecurity"

// +kubebuilder:rbac:groups=ray.io,resources=rayservices,verbs=get;list;watch

// forbiddenPodError is a Pod the spoke would not create: it violates the member's level.
type forbiddenPodError struct {
	what      string
	violation podsecurity.Violation
}

func (e *forbiddenPodError) Error() string {
	return fmt.Sprintf("%s %s", e.what, e.violation)
}

// hubPlaced reports whether rc runs for the hub: it carries the hub's origin labels, or its
// controller is a RayService that does. The owner is looked at too because the labels of a
// RayCluster can be patched by the autoscaler's identity, while a RayService's cannot.
func (r *Reconciler) hubPlaced(ctx context.Context, rc *rayv1.RayCluster) (bool, error) {
	if originLabelled(rc.Labels) {
		return true, nil
	}
	ref := metav1.GetControllerOf(rc)
	if ref == nil || ref.Kind != "RayService" || ref.APIVersion != rayv1.GroupVersion.String() {
		return false, nil
	}
	var rs rayv1.RayService
	err := r.client.Get(ctx, client.ObjectKey{Namespace: rc.Namespace, Name: ref.Name}, &rs)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get RayService %s/%s controlling RayCluster %s: %w", rc.Namespace, ref.Name, rc.Name, err)
	}
	return rs.UID == ref.UID && originLabelled(rs.Labels), nil
}

// originLabelled reports whether l carries the hub's origin labels.
func originLabelled(l map[string]string) bool {
	return l[labels.OriginNamespace] != "" && l[labels.OriginName] != ""
}

// checkPodSecurity decides, once per reconcile, whether the cluster's Pods are checked, and
// checks the Pod every template would give, so the status names each forbidden group even
// when no Pod is due (a template rewritten while its Pods run).
func (r *Reconciler) checkPodSecurity(ctx context.Context, s *scope) error {
	rc := s.cluster
	if r.opts.PodSecurity.Level() == podsecurity.LevelPrivileged {
		return nil
	}
	placed, err := r.hubPlaced(ctx, rc)
	if err != nil || !placed {
		return err
	}
	s.podSecurity = r.opts.PodSecurity
	s.podsForbidden = []string{}
	head, err := builder.HeadPod(rc, r.build)
	if err == nil {
		if v := s.podSecurity.Check(head); v.Forbidden() {
			s.podsForbidden = append(s.podsForbidden, "head Pod "+v.String())
		}
	}
	for i := range rc.Spec.WorkerGroupSpecs {
		g := &rc.Spec.WorkerGroupSpecs[i]
		pod, err := builder.WorkerPod(rc, g, builder.Replica{}, r.build)
		if err != nil {
			continue // the creation reports it
		}
		if v := s.podSecurity.Check(pod); v.Forbidden() {
			s.podsForbidden = append(s.podsForbidden, fmt.Sprintf("worker group %s %s", g.GroupName, v))
		}
	}
	return nil
}

// admitPod refuses pod when the cluster's Pods are checked and pod violates the level. The
// very Pod about to be created is checked, not its template.
func admitPod(s *scope, pod *corev1.Pod, what string) error {
	if s.podSecurity == nil {
		return nil
	}
	if v := s.podSecurity.Check(pod); v.Forbidden() {
		return &forbiddenPodError{what: what, violation: v}
	}
	return nil
}

// forbidden returns the Pod Security refusal in err, if any.
func forbidden(err error) (*forbiddenPodError, bool) {
	var f *forbiddenPodError
	ok := errors.As(err, &f)
	return f, ok
}
