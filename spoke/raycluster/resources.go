package raycluster

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// step is one link of the reconcile chain; the chain stops at the first error.
type step struct {
	name string
	run  func(context.Context, *scope) error
}

func (r *Reconciler) chain() []step {
	return []step{
		{"autoscaler ServiceAccount", r.reconcileAutoscalerServiceAccount},
		{"autoscaler Role", r.reconcileAutoscalerRole},
		{"autoscaler RoleBinding", r.reconcileAutoscalerRoleBinding},
		{"Ingress", r.reconcileIngress},
		{"auth Secret", r.reconcileAuthSecret},
		{"head Service", r.reconcileHeadService},
		{"headless Service", r.reconcileHeadlessService},
		{"serve Service", r.reconcileServeService},
		{"Pods", r.reconcilePods},
	}
}

// reconcileChain runs the steps in KubeRay's order and names the failing one.
func (r *Reconciler) reconcileChain(ctx context.Context, s *scope) error {
	for _, st := range r.chain() {
		if err := st.run(ctx, s); err != nil {
			ctrl.LoggerFrom(ctx).Info("Reconcile step failed", "step", st.name, "error", err.Error())
			return fmt.Errorf("%s: %w", st.name, err)
		}
	}
	return nil
}

// exists reads an object that is created but never watched straight from the API server, so
// the spoke does not cache every ServiceAccount, Role or Secret of the member cluster.
func (r *Reconciler) exists(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	err := r.apiReader.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get %T %s: %w", obj, key, err)
	}
	return true, nil
}

// create creates obj for rc and records the outcome as KubeRay does; an object that appeared
// meanwhile is success.
func (r *Reconciler) create(ctx context.Context, rc *rayv1.RayCluster, obj client.Object, kind, okReason, failReason string) error {
	err := r.client.Create(ctx, obj, client.FieldOwner(fieldManager))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		r.eventf(rc, obj, corev1.EventTypeWarning, failReason, "Failed creating %s %s/%s: %v",
			kind, obj.GetNamespace(), obj.GetName(), err)
		return fmt.Errorf("create %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	r.eventf(rc, obj, corev1.EventTypeNormal, okReason, "Created %s %s/%s", kind, obj.GetNamespace(), obj.GetName())
	return nil
}

func (r *Reconciler) reconcileAutoscalerServiceAccount(ctx context.Context, s *scope) error {
	rc := s.cluster
	if !rayspec.Autoscaling(&rc.Spec) {
		return nil
	}
	sa := builder.AutoscalerServiceAccount(rc)
	found, err := r.exists(ctx, client.ObjectKeyFromObject(sa), &corev1.ServiceAccount{})
	if err != nil || found {
		return err
	}
	if builder.UserProvidesServiceAccount(rc) {
		// A ServiceAccount the user named is the user's to create: creating it would hand the
		// head Pod permissions the user did not choose.
		msg := fmt.Sprintf("ServiceAccount %s named by the head Pod template does not exist; create it "+
			"(the autoscaler needs it to read and patch Pods and the RayCluster)", sa.Name)
		r.eventf(rc, sa, corev1.EventTypeWarning, reasonAutoscalerServiceAccountMissing, "%s", msg)
		return fmt.Errorf("%s", msg)
	}
	return r.create(ctx, rc, sa, "service account", reasonCreatedServiceAccount, reasonFailedToCreateServiceAccount)
}

func (r *Reconciler) reconcileAutoscalerRole(ctx context.Context, s *scope) error {
	if !rayspec.Autoscaling(&s.cluster.Spec) {
		return nil
	}
	role := builder.AutoscalerRole(s.cluster)
	var existing rbacv1.Role
	found, err := r.exists(ctx, client.ObjectKeyFromObject(role), &existing)
	switch {
	case err != nil:
		return err
	case !found:
		return r.create(ctx, s.cluster, role, "role", reasonCreatedRole, reasonFailedToCreateRole)
	case !r.ownership(s, &existing, "Role"):
		// Binding the head's ServiceAccount to someone else's Role would grant it whatever
		// that Role grants.
		s.foreignRole = true
		return nil
	}
	return r.repairRole(ctx, s, &existing, role)
}

func (r *Reconciler) reconcileAutoscalerRoleBinding(ctx context.Context, s *scope) error {
	if !rayspec.Autoscaling(&s.cluster.Spec) || s.foreignRole {
		return nil
	}
	rb := builder.AutoscalerRoleBinding(s.cluster)
	var existing rbacv1.RoleBinding
	found, err := r.exists(ctx, client.ObjectKeyFromObject(rb), &existing)
	if err != nil {
		return err
	}
	if found {
		r.ownership(s, &existing, "RoleBinding")
		return nil
	}
	return r.create(ctx, s.cluster, rb, "role binding", reasonCreatedRoleBinding, reasonFailedToCreateRoleBinding)
}

func (r *Reconciler) reconcileIngress(ctx context.Context, s *scope) error {
	rc := s.cluster
	if rc.Spec.HeadGroupSpec.EnableIngress == nil || !*rc.Spec.HeadGroupSpec.EnableIngress {
		return nil
	}
	ing, err := builder.HeadIngress(rc)
	if err != nil {
		return fmt.Errorf("build Ingress: %w", err)
	}
	var existing networkingv1.Ingress
	found, err := r.exists(ctx, client.ObjectKeyFromObject(ing), &existing)
	if err != nil {
		return err
	}
	if found {
		// Never updated, as in KubeRay; one that is not the RayCluster's is reported.
		r.ownership(s, &existing, "Ingress")
		return nil
	}
	return r.create(ctx, rc, ing, "ingress", reasonCreatedIngress, reasonFailedToCreateIngress)
}

func (r *Reconciler) reconcileAuthSecret(ctx context.Context, s *scope) error {
	if !builder.NeedsAuthSecret(s.cluster) {
		return nil
	}
	key := types.NamespacedName{Namespace: s.cluster.Namespace, Name: builder.AuthSecretName(s.cluster)}
	found, err := r.exists(ctx, key, &corev1.Secret{})
	if err != nil || found {
		return err
	}
	token, err := builder.NewAuthToken()
	if err != nil {
		return err
	}
	return r.create(ctx, s.cluster, builder.AuthSecret(s.cluster, token), "secret", reasonCreatedSecret, reasonFailedToCreateSecret)
}

func (r *Reconciler) reconcileHeadService(ctx context.Context, s *scope) error {
	rc := s.cluster
	var svcs corev1.ServiceList
	if err := r.client.List(ctx, &svcs, client.InNamespace(rc.Namespace),
		client.MatchingLabels(builder.HeadServiceLabels(rc))); err != nil {
		return fmt.Errorf("list head Services: %w", err)
	}
	switch len(svcs.Items) {
	case 0:
	case 1:
		s.headService = &svcs.Items[0]
		return nil
	default:
		names := make([]string, len(svcs.Items))
		for i := range svcs.Items {
			names[i] = svcs.Items[i].Name
		}
		return fmt.Errorf("%d head Services %v select RayCluster %s; delete the extra ones", len(names), names, rc.Name)
	}
	svc, err := builder.HeadService(rc, r.build)
	if err != nil {
		return fmt.Errorf("build head Service: %w", err)
	}
	if len(svc.Spec.Ports) == 0 {
		return fmt.Errorf("head Service %s would expose no ports: give the head container named ports", svc.Name)
	}
	if err := r.create(ctx, rc, svc, "service", reasonCreatedService, reasonFailedToCreateService); err != nil {
		return err
	}
	s.headService = svc
	return nil
}

func (r *Reconciler) reconcileHeadlessService(ctx context.Context, s *scope) error {
	rc := s.cluster
	if !rayspec.MultiHost(&rc.Spec) {
		return nil
	}
	var svcs corev1.ServiceList
	if err := r.client.List(ctx, &svcs, client.InNamespace(rc.Namespace),
		client.MatchingLabels{labels.HeadlessWorkerService: rc.Name}); err != nil {
		return fmt.Errorf("list headless Services: %w", err)
	}
	if len(svcs.Items) > 0 {
		return nil
	}
	return r.create(ctx, rc, builder.HeadlessService(rc), "service", reasonCreatedService, reasonFailedToCreateService)
}

func (r *Reconciler) reconcileServeService(ctx context.Context, s *scope) error {
	rc := s.cluster
	if !builder.ServeServiceEnabled(rc) {
		return nil
	}
	svc, err := builder.ServeService(rc)
	if err != nil {
		return fmt.Errorf("build serve Service: %w", err)
	}
	var existing corev1.Service
	err = r.client.Get(ctx, client.ObjectKeyFromObject(svc), &existing)
	if err == nil {
		r.ownership(s, &existing, "Service")
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("get serve Service %s: %w", svc.Name, err)
	}
	return r.create(ctx, rc, svc, "service", reasonCreatedService, reasonFailedToCreateService)
}
