package rayservice

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/rayfleet/rayfleet/shared/jsonsubset"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/names"
)

// When the hub routes to its members through Multi-Cluster Services (ServiceImport backends),
// it annotates each copy with labels.ServeExport (the member's name). The spoke then keeps a
// ClusterIP Service names.ServeExport selecting what the serve Service selects, and a
// ServiceExport of the same name: exports of one name merge across the clusters of a
// ClusterSet, so the member's name keeps each member's share apart. It keeps the same pair
// under names.LegacyServeExport too, annotated labels.LegacyServeExport, for hubs that route
// to that name (see there for when it goes). All are controlled by the RayService (they go
// with it) and removed when the annotation goes. KubeRay has no such thing.
//
// +kubebuilder:rbac:groups=core,resources=services,verbs=delete
// +kubebuilder:rbac:groups=multicluster.x-k8s.io,resources=serviceexports,verbs=get;list;watch;create;update;patch;delete

// Event reasons of the export, RayFleet's own.
const (
	reasonServiceExportNotInstalled = "ServiceExportNotInstalled"
	reasonCreatedServiceExport      = "CreatedServiceExport"
	reasonDeletedServiceExport      = "DeletedServiceExport"
	reasonFailedToExportService     = "FailedToCreateServiceExport"
)

// exportMarker is the label value that marks the Services and ServiceExports of the export,
// under the labels.ServeExport key; the member's name is in the annotation of the same key
// (a member's name may be longer than a label value).
const exportMarker = "true"

// exportKindRecheck is how long the answer "the ServiceExport kind is not installed" is
// trusted before discovery is asked again: every RayService reconciles every requeueSoon, and
// a missing group costs a discovery request each time it is looked up.
const exportKindRecheck = time.Minute

// exportKind remembers whether the member serves the ServiceExport kind.
type exportKind struct {
	mapper meta.RESTMapper
	clock  clock.PassiveClock

	mu        sync.Mutex
	missingAt time.Time
	missing   bool
}

func newExportKind(mapper meta.RESTMapper, clk clock.PassiveClock) *exportKind {
	return &exportKind{mapper: mapper, clock: clk}
}

// installed reports whether the ServiceExport kind is served. A kind found stays found (the
// mapper caches it); a missing one is looked up again after exportKindRecheck.
func (k *exportKind) installed() (bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.missing && k.clock.Since(k.missingAt) < exportKindRecheck {
		return false, nil
	}
	gvk := mcsv1alpha1.SchemeGroupVersion.WithKind(mcsv1alpha1.ServiceExportKindName)
	_, err := k.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		k.missing, k.missingAt = true, k.clock.Now()
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look up the kind %s: %w", gvk, err)
	}
	k.missing = false
	return true, nil
}

// exportMember is the member the hub asked rs's serve Service to be exported as; empty when it
// asked for no export (or rs is not, or no longer, a hub copy).
func exportMember(rs *rayv1.RayService) string {
	if !hubCopy(rs) || !rs.DeletionTimestamp.IsZero() {
		return ""
	}
	return rs.Annotations[labels.ServeExport]
}

// exportName is one name the serve Service is exported under.
type exportName struct {
	name   string
	legacy bool
}

// exportNames are the names rs's serve Service is exported under for member: the current one
// first, then the legacy one when it differs; none without a member.
func exportNames(rayService, member string) []exportName {
	if member == "" {
		return nil
	}
	current, legacy := names.ServeExport(rayService, member), names.LegacyServeExport(rayService, member)
	out := []exportName{{name: current}}
	if legacy != current {
		out = append(out, exportName{name: legacy, legacy: true})
	}
	return out
}

// reconcileExport keeps the exports the hub asked for and removes any other.
func (r *Reconciler) reconcileExport(ctx context.Context, s *scope) error {
	member := exportMember(s.rs)
	want := exportNames(s.rs.Name, member)
	installed, err := r.exportKind.installed()
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, e := range want {
		keep[e.name] = true
	}
	if err = r.removeStaleExports(ctx, s, keep, installed); err != nil {
		return err
	}
	if len(want) == 0 {
		return nil
	}
	serve, err := getOptional(ctx, r.client, s.rs.Namespace, serveServiceName(s), &corev1.Service{})
	if err != nil {
		return fmt.Errorf("read serve Service of RayService %s: %w", s.key, err)
	}
	if serve == nil {
		return nil // nothing to copy yet; the next pass exports it
	}
	var errs []error
	for _, e := range want {
		errs = append(errs, r.reconcileExportName(ctx, s, serve, e, member, installed))
	}
	return errors.Join(errs...)
}

// reconcileExportName keeps the export Service and ServiceExport of one name.
func (r *Reconciler) reconcileExportName(ctx context.Context, s *scope, serve *corev1.Service, e exportName, member string, installed bool) error {
	desired, err := r.exportService(s.rs, serve, e, member)
	if err != nil {
		return err
	}
	if err = r.ensureExportService(ctx, s, desired); err != nil {
		return err
	}
	if !installed {
		if !e.legacy {
			r.eventf(s.rs, nil, corev1.EventTypeWarning, reasonServiceExportNotInstalled,
				"Cannot export Service %s/%s for member %s: the ServiceExport kind (%s) is not installed on this member; the Service is kept",
				desired.Namespace, desired.Name, member, mcsv1alpha1.GroupVersion)
		}
		return nil
	}
	return r.ensureServiceExport(ctx, s, desired)
}

// exportService builds the export Service e of rs: ClusterIP, with serve's selector and
// ports (without node ports), controlled by rs.
func (r *Reconciler) exportService(rs *rayv1.RayService, serve *corev1.Service, e exportName, member string) (*corev1.Service, error) {
	svc := &corev1.Service{}
	svc.Name, svc.Namespace = e.name, rs.Namespace
	svc.Labels = exportLabels(rs)
	svc.Annotations = map[string]string{labels.ServeExport: member}
	if e.legacy {
		svc.Annotations[labels.LegacyServeExport] = labels.True
	}
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	svc.Spec.Selector = maps.Clone(serve.Spec.Selector)
	for _, p := range serve.Spec.Ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: p.Name, Protocol: p.Protocol,
			AppProtocol: p.AppProtocol, Port: p.Port, TargetPort: p.TargetPort})
	}
	if err := controllerutil.SetControllerReference(rs, svc, r.client.Scheme()); err != nil {
		return nil, fmt.Errorf("own export Service %s/%s by RayService %s: %w", svc.Namespace, svc.Name, rs.Name, err)
	}
	return svc, nil
}

// exportLabels mark the export objects of rs.
func exportLabels(rs *rayv1.RayService) map[string]string {
	return map[string]string{
		labels.OriginatedFromCRName: rs.Name,
		labels.OriginatedFromCRD:    originRayService,
		labels.ServeExport:          exportMarker,
	}
}

// ensureExportService creates desired, or brings an existing one's selector, ports and legacy
// mark to desired's; a settled Service costs no write.
func (r *Reconciler) ensureExportService(ctx context.Context, s *scope, desired *corev1.Service) error {
	existing, err := getOptional(ctx, r.client, desired.Namespace, desired.Name, &corev1.Service{})
	if err != nil {
		return err
	}
	if existing == nil {
		return r.createService(ctx, s, desired)
	}
	if !metav1.IsControlledBy(existing, s.rs) {
		return fmt.Errorf("export Service %s/%s of RayService %s exists and is not the RayService's", desired.Namespace, desired.Name, s.key)
	}
	legacy := desired.Annotations[labels.LegacyServeExport]
	if maps.Equal(existing.Spec.Selector, desired.Spec.Selector) && jsonsubset.Covers(existing.Spec.Ports, desired.Spec.Ports) &&
		existing.Annotations[labels.LegacyServeExport] == legacy {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Spec.Selector = desired.Spec.Selector
	updated.Spec.Ports = desired.Spec.Ports
	if legacy != "" {
		if updated.Annotations == nil {
			updated.Annotations = map[string]string{}
		}
		updated.Annotations[labels.LegacyServeExport] = legacy
	} else {
		delete(updated.Annotations, labels.LegacyServeExport)
	}
	if err := r.client.Patch(ctx, updated, client.MergeFrom(existing), client.FieldOwner(fieldManager)); err != nil {
		r.eventf(s.rs, existing, corev1.EventTypeWarning, reasonFailedToUpdateService, "Failed to update the service %s/%s, %v",
			existing.Namespace, existing.Name, err)
		return fmt.Errorf("update export Service %s/%s of RayService %s: %w", existing.Namespace, existing.Name, s.key, err)
	}
	r.eventf(s.rs, existing, corev1.EventTypeNormal, reasonUpdatedService, "Updated the service %s/%s", existing.Namespace, existing.Name)
	return nil
}

// ensureServiceExport creates the ServiceExport of svc when it is missing. Its spec is empty:
// the Multi-Cluster Services implementation reads the Service of the same name.
func (r *Reconciler) ensureServiceExport(ctx context.Context, s *scope, svc *corev1.Service) error {
	existing, err := getOptional(ctx, r.client, svc.Namespace, svc.Name, &mcsv1alpha1.ServiceExport{})
	if err != nil || existing != nil {
		return err
	}
	export := &mcsv1alpha1.ServiceExport{}
	export.Name, export.Namespace = svc.Name, svc.Namespace
	export.Labels = exportLabels(s.rs)
	export.Annotations = maps.Clone(svc.Annotations)
	if err = controllerutil.SetControllerReference(s.rs, export, r.client.Scheme()); err != nil {
		return fmt.Errorf("own ServiceExport %s/%s by RayService %s: %w", export.Namespace, export.Name, s.key, err)
	}
	err = r.client.Create(ctx, export, client.FieldOwner(fieldManager))
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err != nil {
		r.eventf(s.rs, export, corev1.EventTypeWarning, reasonFailedToExportService, "Failed to create the ServiceExport %s/%s: %v",
			export.Namespace, export.Name, err)
		return fmt.Errorf("create ServiceExport %s/%s of RayService %s: %w", export.Namespace, export.Name, s.key, err)
	}
	r.eventf(s.rs, export, corev1.EventTypeNormal, reasonCreatedServiceExport, "Created the ServiceExport %s/%s", export.Namespace, export.Name)
	return nil
}

// removeStaleExports deletes the export Services and ServiceExports of rs not named in keep;
// ServiceExports only when the kind is installed.
func (r *Reconciler) removeStaleExports(ctx context.Context, s *scope, keep map[string]bool, installed bool) error {
	sel := client.MatchingLabels(exportLabels(s.rs))
	var services corev1.ServiceList
	if err := r.client.List(ctx, &services, client.InNamespace(s.rs.Namespace), sel); err != nil {
		return fmt.Errorf("list export Services of RayService %s: %w", s.key, err)
	}
	var stale []client.Object
	for i := range services.Items {
		if svc := &services.Items[i]; !keep[svc.Name] && metav1.IsControlledBy(svc, s.rs) {
			stale = append(stale, svc)
		}
	}
	if installed {
		var exports mcsv1alpha1.ServiceExportList
		if err := r.client.List(ctx, &exports, client.InNamespace(s.rs.Namespace), sel); err != nil {
			return fmt.Errorf("list ServiceExports of RayService %s: %w", s.key, err)
		}
		for i := range exports.Items {
			if e := &exports.Items[i]; !keep[e.Name] && metav1.IsControlledBy(e, s.rs) {
				stale = append(stale, e)
			}
		}
	}
	var errs []error
	for _, obj := range stale {
		kind := "Service"
		if _, ok := obj.(*mcsv1alpha1.ServiceExport); ok {
			kind = "ServiceExport"
		}
		err := r.client.Delete(ctx, obj, client.Preconditions{UID: ptrTo(obj.GetUID())})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("delete export %s %s/%s of RayService %s: %w", kind, obj.GetNamespace(), obj.GetName(), s.key, err))
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Removed a serve export", "kind", kind, "name", obj.GetName())
		r.eventf(s.rs, obj, corev1.EventTypeNormal, reasonDeletedServiceExport, "Deleted the %s %s/%s of the serve export",
			kind, obj.GetNamespace(), obj.GetName())
	}
	return errors.Join(errs...)
}
