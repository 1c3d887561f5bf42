package rayservice

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/jsonsubset"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// reconcileServices points the RayService's head and serve Services at the cluster ready to
// take traffic: the pending cluster as soon as it is ready (that is the switch of a NewCluster
// upgrade), else the active one. During an incremental upgrade they stay on the active
// cluster; the HTTPRoute moves the traffic instead, and the serve Service is the active
// cluster's own, as in KubeRay.
func (r *Reconciler) reconcileServices(ctx context.Context, s *scope) error {
	if !s.activeReady && !s.pendingReady {
		return nil
	}
	target := s.active
	if s.pendingReady && !s.incrementalInProgress() {
		target = s.pending
	}
	if target == nil {
		return nil
	}
	head, err := builder.RayServiceHeadService(s.rs, target, r.build)
	if err != nil {
		return err
	}
	var serveSvc *corev1.Service
	// A cluster's own serve Service is the cluster's; the RayService's are the RayService's.
	serveOwner := owner{s.rs, "RayService"}
	if s.incremental {
		serveSvc, err = builder.ClusterServeService(s.rs, target)
		serveOwner = owner{target, "RayCluster"}
	} else {
		serveSvc, err = builder.RayServiceServeService(s.rs, target)
	}
	if err != nil {
		return err
	}
	headOK, serveOK := true, true
	if s.headSelects, headOK, err = r.pointService(ctx, s, head, owner{s.rs, "RayService"}); err != nil {
		return err
	}
	if s.serveSelects, serveOK, err = r.pointService(ctx, s, serveSvc, serveOwner); err != nil {
		return err
	}
	// A Service that is not the RayService's selects nothing of it: no switch is judged
	// from it, and OwnershipConflict says why.
	s.servicesReconciled = headOK && serveOK
	return nil
}

// owner is the object that controls what the reconcile writes, and its kind.
type owner struct {
	obj  client.Object
	kind string
}

// ownership records whether existing, an object of kind the reconcile would write for o, is
// the spoke's to change; when it is not, it reports the conflict (event and OwnershipConflict)
// and returns false.
func (r *Reconciler) ownership(s *scope, existing client.Object, kind string, o owner) bool {
	if s.conflicts == nil {
		s.conflicts = []string{}
	}
	why := builder.NotControlled(existing, kind, o.obj, o.kind)
	if why == "" {
		return true
	}
	s.conflicts = append(s.conflicts, why)
	r.eventf(s.rs, existing, corev1.EventTypeWarning, reasonOwnershipConflict, "%s; the spoke leaves it as it is", why)
	return false
}

// pointService creates desired, or points the existing Service at desired's cluster when it
// selects another one, and returns the cluster it now selects. Only the selector and the ports
// change (a node port a port already had is kept); the cluster IP and everything else stay.
// A Service the RayService does not control is left as it is, and owned is false.
func (r *Reconciler) pointService(ctx context.Context, s *scope, desired *corev1.Service, o owner) (selects string, owned bool, err error) {
	existing, err := getOptional(ctx, r.client, desired.Namespace, desired.Name, &corev1.Service{})
	if err != nil {
		return "", false, err
	}
	want := desired.Spec.Selector[labels.Cluster]
	if existing == nil {
		return want, true, r.createService(ctx, s, desired)
	}
	if !r.ownership(s, existing, "Service", o) {
		return "", false, nil
	}
	if existing.Spec.Selector[labels.Cluster] == want {
		return want, true, nil
	}
	updated := existing.DeepCopy()
	updated.Spec.Selector = desired.Spec.Selector
	updated.Spec.Ports = keepNodePorts(desired.Spec.Ports, existing.Spec.Ports)
	if err := r.client.Patch(ctx, updated, client.MergeFrom(existing), client.FieldOwner(fieldManager)); err != nil {
		r.eventf(s.rs, existing, corev1.EventTypeWarning, reasonFailedToUpdateService, "Failed to update the service %s/%s, %v",
			existing.Namespace, existing.Name, err)
		return existing.Spec.Selector[labels.Cluster], true, fmt.Errorf("point Service %s/%s at RayCluster %s: %w",
			existing.Namespace, existing.Name, want, err)
	}
	ctrl.LoggerFrom(ctx).Info("Switched Service to RayCluster", "service", existing.Name,
		"from", existing.Spec.Selector[labels.Cluster], "to", want)
	r.eventf(s.rs, existing, corev1.EventTypeNormal, reasonUpdatedService, "Updated the service %s/%s", existing.Namespace, existing.Name)
	return want, true, nil
}

// keepNodePorts returns ports with the node ports of existing ports of the same name, so a
// switch does not hand out new ones to NodePort and LoadBalancer Services.
func keepNodePorts(ports, existing []corev1.ServicePort) []corev1.ServicePort {
	byName := make(map[string]int32, len(existing))
	for _, p := range existing {
		byName[p.Name] = p.NodePort
	}
	out := make([]corev1.ServicePort, len(ports))
	for i, p := range ports {
		if p.NodePort == 0 {
			p.NodePort = byName[p.Name]
		}
		out[i] = p
	}
	return out
}

// createService creates a Service of the RayService; one that appeared meanwhile is success.
func (r *Reconciler) createService(ctx context.Context, s *scope, svc *corev1.Service) error {
	err := r.client.Create(ctx, svc, client.FieldOwner(fieldManager))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		r.eventf(s.rs, svc, corev1.EventTypeWarning, reasonFailedToCreateService, "Failed to create the service %s/%s, %v",
			svc.Namespace, svc.Name, err)
		return fmt.Errorf("create Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	r.eventf(s.rs, svc, corev1.EventTypeNormal, reasonCreatedService, "Created the service %s/%s", svc.Namespace, svc.Name)
	return nil
}

// objectKind names a kind of object ensure maintains, with KubeRay's event reasons for it.
type objectKind[T client.Object] struct {
	name                                     string
	created, updated, failCreate, failUpdate string
	// spec returns the part of an object the reconciler owns; setSpec copies it.
	spec    func(T) any
	setSpec func(dst, src T)
}

var gatewayKind = objectKind[*gwv1.Gateway]{
	name:    "Gateway",
	created: reasonCreatedGateway, updated: reasonUpdatedGateway,
	failCreate: reasonFailedToCreateGateway, failUpdate: reasonFailedToUpdateGateway,
	spec:    func(g *gwv1.Gateway) any { return g.Spec },
	setSpec: func(dst, src *gwv1.Gateway) { dst.Spec = *src.Spec.DeepCopy() },
}

var httpRouteKind = objectKind[*gwv1.HTTPRoute]{
	name:    "HTTPRoute",
	created: reasonCreatedHTTPRoute, updated: reasonUpdatedHTTPRoute,
	failCreate: reasonFailedToCreateHTTPRoute, failUpdate: reasonFailedToUpdateHTTPRoute,
	spec:    func(h *gwv1.HTTPRoute) any { return h.Spec },
	setSpec: func(dst, src *gwv1.HTTPRoute) { dst.Spec = *src.Spec.DeepCopy() },
}

// ensure creates desired when it is missing, or merge-patches the existing object's spec to
// desired's when it does not already say what desired says (jsonsubset.Covers), and reports
// whether the object is the RayService's. A settled object costs no write; one the RayService
// does not control is left as it is (owned false).
func ensure[T client.Object](ctx context.Context, r *Reconciler, s *scope, desired, existing T, k objectKind[T]) (owned bool, err error) {
	err = r.client.Get(ctx, client.ObjectKeyFromObject(desired), existing)
	switch {
	case apierrors.IsNotFound(err):
		err = r.client.Create(ctx, desired, client.FieldOwner(fieldManager))
		if apierrors.IsAlreadyExists(err) {
			// Not in the cache yet: whose it is shows on the next pass.
			return false, nil
		}
		if err != nil {
			r.eventf(s.rs, desired, corev1.EventTypeWarning, k.failCreate, "Failed to create the %s %s/%s: %v",
				k.name, desired.GetNamespace(), desired.GetName(), err)
			return false, fmt.Errorf("create %s %s/%s: %w", k.name, desired.GetNamespace(), desired.GetName(), err)
		}
		r.eventf(s.rs, desired, corev1.EventTypeNormal, k.created, "Created %s for RayService %s/%s", k.name, desired.GetNamespace(), desired.GetName())
		return true, nil
	case err != nil:
		return false, fmt.Errorf("get %s %s/%s: %w", k.name, desired.GetNamespace(), desired.GetName(), err)
	}
	if !r.ownership(s, existing, k.name, owner{s.rs, "RayService"}) {
		return false, nil
	}
	if jsonsubset.Covers(k.spec(existing), k.spec(desired)) {
		return true, nil
	}
	updated, ok := existing.DeepCopyObject().(T)
	if !ok {
		return false, fmt.Errorf("copy %s %s/%s", k.name, desired.GetNamespace(), desired.GetName())
	}
	k.setSpec(updated, desired)
	if err := r.client.Patch(ctx, updated, client.MergeFrom(existing), client.FieldOwner(fieldManager)); err != nil {
		r.eventf(s.rs, existing, corev1.EventTypeWarning, k.failUpdate, "Failed to update the %s %s/%s: %v",
			k.name, existing.GetNamespace(), existing.GetName(), err)
		return true, fmt.Errorf("update %s %s/%s: %w", k.name, existing.GetNamespace(), existing.GetName(), err)
	}
	r.eventf(s.rs, updated, corev1.EventTypeNormal, k.updated, "Updated the %s %s/%s", k.name, existing.GetNamespace(), existing.GetName())
	return true, nil
}
