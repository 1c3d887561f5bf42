package raycluster

import (
	"context"
	"errors"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
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

// hubPlaced reports whether rc runs for the hub: it carries the hub's origin labels, or a
// RayService of its namespace that carries them controls it or names it as its active or
// pending cluster. The autoscaler's identity can patch a RayCluster's labels and owner
// references away, but neither a RayService's labels nor its status, which only the spoke
// writes.
func (r *Reconciler) hubPlaced(ctx context.Context, rc *rayv1.RayCluster) (bool, error) {
	if originLabelled(rc.Labels) {
		return true, nil
	}
	var list rayv1.RayServiceList
	if err := r.client.List(ctx, &list, client.InNamespace(rc.Namespace)); err != nil {
		return false, fmt.Errorf("list RayServices of namespace %s for RayCluster %s: %w", rc.Namespace, rc.Name, err)
	}
	for i := range list.Items {
		rs := &list.Items[i]
		if !originLabelled(rs.Labels) {
			continue
		}
		if metav1.IsControlledBy(rc, rs) || rs.Status.ActiveServiceStatus.RayClusterName == rc.Name ||
			rs.Status.PendingServiceStatus.RayClusterName == rc.Name {
			return true, nil
		}
	}
	return false, nil
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
