package rayservice

import (
	"context"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/rayservice/serve"
	"github.com/rayfleet/rayfleet/spoke/rayservice/upgrade"
)

// Initial target capacities of an incremental upgrade, as KubeRay records them once the
// Gateway is ready: the active cluster runs everything, the pending one nothing yet.
const (
	initialActiveCapacity  int32 = 100
	initialPendingCapacity int32 = 0
)

// reconcileTargetCapacity moves the target_capacity of one cluster one step during an
// incremental upgrade (upgrade.NextCapacity), once the Gateway and the HTTPRoute are ready. The
// cluster gets the config it last received (for the active cluster, the frozen old one) with
// the new target_capacity. A dashboard failure is an event and a message, and the step is
// tried again on the next pass.
func (r *Reconciler) reconcileTargetCapacity(ctx context.Context, s *scope) error {
	log := ctrl.LoggerFrom(ctx)
	st := &s.rs.Status
	if !s.incrementalInProgress() || s.active == nil || s.pending == nil {
		return nil
	}
	gw, err := getOptional(ctx, r.client, s.rs.Namespace, builder.GatewayName(s.rs), &gwv1.Gateway{})
	if err != nil {
		return err
	}
	route, err := getOptional(ctx, r.client, s.rs.Namespace, builder.HTTPRouteName(s.rs), &gwv1.HTTPRoute{})
	if err != nil {
		return err
	}
	if !upgrade.GatewayReady(gw) || !upgrade.RouteReady(gw, route) {
		log.V(1).Info("Gateway or HTTPRoute not ready; target_capacity unchanged")
		return nil
	}
	if st.ActiveServiceStatus.TargetCapacity == nil {
		st.ActiveServiceStatus.TargetCapacity = ptrTo(initialActiveCapacity)
	}
	if st.PendingServiceStatus.TargetCapacity == nil {
		st.PendingServiceStatus.TargetCapacity = ptrTo(initialPendingCapacity)
	}
	change, ok := upgrade.NextCapacity(st, rayspec.UpgradeOptions(&s.rs.Spec))
	if !ok {
		return nil
	}
	dash := s.dashboards[change.Cluster]
	if dash == nil {
		log.V(1).Info("Dashboard not reached this pass; target_capacity change postponed", "cluster", change.Cluster.String())
		return nil
	}
	rc := s.cluster(change.Cluster)
	// After a restart nothing is cached, and the spec's config is the best guess there is.
	config := s.rs.Spec.ServeConfigV2
	if last, ok := r.configs.Get(s.key, rc.Name); ok {
		config = last.Config
	}
	body, err := serve.ConfigJSON(config, &change.Goal)
	if err == nil {
		err = dash.UpdateDeployments(ctx, body)
	}
	if err != nil {
		r.eventf(s.rs, rc, corev1.EventTypeWarning, reasonFailedToUpdateCapacity,
			"Failed to update target_capacity of serve applications to the RayCluster %s/%s: %v", rc.Namespace, rc.Name, err)
		sv := s.serveOf(change.Cluster)
		sv.Problem = joinProblems(sv.Problem, fmt.Sprintf("failed to set target_capacity %d on RayCluster %s: %v", change.Goal, rc.Name, err))
		return nil
	}
	r.configs.Put(s.key, rc.Name, serve.Submitted{Config: config, TargetCapacity: ptrTo(change.Goal)})
	r.polls.noteSubmit(s.rs, r.clock.Now())
	s.statusOf(change.Cluster).TargetCapacity = ptrTo(change.Goal)
	log.Info("Updated target_capacity", "rayCluster", rc.Name, "role", change.Cluster.String(), "targetCapacity", change.Goal)
	r.eventf(s.rs, rc, corev1.EventTypeNormal, reasonUpdatedTargetCapacity,
		"Updated target_capacity of serve applications to %d on the RayCluster %s/%s", change.Goal, rc.Namespace, rc.Name)
	return nil
}

// reconcileIncremental maintains what an incremental upgrade routes through: a serve Service
// per cluster, the Gateway, and the HTTPRoute whose weights move one step at a time
// (upgrade.NextTraffic).
func (r *Reconciler) reconcileIncremental(ctx context.Context, s *scope) error {
	if !s.incremental {
		return nil
	}
	for _, rc := range []*rayv1.RayCluster{s.active, s.pending} {
		if rc == nil {
			continue
		}
		if err := r.ensureClusterServeService(ctx, s, rc); err != nil {
			return err
		}
	}
	desiredGW, err := builder.Gateway(s.rs)
	if err != nil {
		return err
	}
	owned, err := ensure(ctx, r, s, desiredGW, &gwv1.Gateway{}, gatewayKind)
	if err != nil || !owned {
		// Traffic through a Gateway someone else controls is not the RayService's to route.
		return err
	}
	if s.active == nil {
		return nil // the route is made once a cluster is active, as in KubeRay
	}
	w := upgrade.NextTraffic(&s.rs.Status, rayspec.UpgradeOptions(&s.rs.Spec), s.pendingReady, r.clock.Now())
	backends := []builder.Backend{{
		Service: builder.ClusterServeServiceName(s.active), Port: builder.ServePort(s.active), Weight: w.Active,
	}}
	if s.pending != nil {
		backends = append(backends, builder.Backend{
			Service: builder.ClusterServeServiceName(s.pending), Port: builder.ServePort(s.pending), Weight: w.Pending,
		})
	}
	desiredRoute, err := builder.HTTPRoute(s.rs, backends)
	if err != nil {
		return err
	}
	if owned, err = ensure(ctx, r, s, desiredRoute, &gwv1.HTTPRoute{}, httpRouteKind); err != nil || !owned {
		return err
	}
	s.weights = &w
	return nil
}

// ensureClusterServeService creates the serve Service of one cluster when it is missing; it
// selects its own cluster for good, so an existing one is left as it is.
func (r *Reconciler) ensureClusterServeService(ctx context.Context, s *scope, rc *rayv1.RayCluster) error {
	desired, err := builder.ClusterServeService(s.rs, rc)
	if err != nil {
		return err
	}
	existing, err := getOptional(ctx, r.client, desired.Namespace, desired.Name, &corev1.Service{})
	if err != nil {
		return err
	}
	if existing != nil {
		r.ownership(s, existing, "Service", owner{rc, "RayCluster"})
		return nil
	}
	return r.createService(ctx, s, desired)
}

// getOptional reads an object from the cache; nil when it does not exist.
func getOptional[T client.Object](ctx context.Context, c client.Reader, ns, name string, obj T) (T, error) {
	var zero T
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, fmt.Errorf("get %T %s/%s: %w", obj, ns, name, err)
	}
	return obj, nil
}

func ptrTo[T any](v T) *T { return &v }

// joinProblems joins two dashboard problems for one condition message.
func joinProblems(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	default:
		return a + "; " + b
	}
}
