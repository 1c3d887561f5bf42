package rayservice

import (
	"context"
	"fmt"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/rayservice/serve"
	"github.com/rayfleet/rayfleet/spoke/rayservice/status"
	"github.com/rayfleet/rayfleet/spoke/rayservice/upgrade"
)

// troubleshootingURL is KubeRay's page for Serve submissions that keep failing.
const troubleshootingURL = "https://docs.ray.io/en/latest/cluster/kubernetes/troubleshooting/rayservice-troubleshooting.html"

// reconcileServe deploys the Serve config to the clusters that should run it and reads their
// applications, as KubeRay chooses them: the pending cluster when there is one; the active
// cluster when there is no pending one (and none is about to be prepared), or during an
// incremental upgrade, when both serve.
//
// The active cluster of a NewCluster upgrade is left alone, as in KubeRay; its application
// statuses last recorded are kept (KubeRay blanks them) since it keeps serving meanwhile.
func (r *Reconciler) reconcileServe(ctx context.Context, s *scope) error {
	st := &s.rs.Status
	if s.pending != nil {
		s.pendingServe, s.pendingReady = r.serveCluster(ctx, s, upgrade.Pending)
	}
	switch {
	case s.active == nil:
	case s.pending == nil && !upgrade.ShouldPrepareNewCluster(&s.rs.Spec, st, s.active, nil, false, r.opts.ZeroDowntime),
		s.pending != nil && s.incremental:
		s.activeServe, s.activeReady = r.serveCluster(ctx, s, upgrade.Active)
	default:
		s.activeServe = status.ClusterServe{Keep: true}
	}
	return nil
}

// serveCluster reads the Serve applications of the cluster playing role and submits the
// Serve config when serve.NeedsSubmit says so (never to the active cluster during an
// incremental upgrade: its config is frozen, the new one goes to the pending cluster). It
// reports whether every application runs. A dashboard failure is an event and a message in
// the status, never an error of the reconcile.
//
// The active cluster of a settled RayService is read only when its next read is due
// (activeReadCanWait); meanwhile the statuses last recorded stand, and it counts as ready, which
// it was when last read.
func (r *Reconciler) serveCluster(ctx context.Context, s *scope, role upgrade.Role) (status.ClusterServe, bool) {
	log := ctrl.LoggerFrom(ctx)
	rc := s.cluster(role)
	// Ray's dashboard starts with the head; before the head is ready there is nobody to ask.
	if !meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.HeadPodReady)) {
		log.V(1).Info("Head Pod not ready; Serve not reconciled", "rayCluster", rc.Name)
		return status.ClusterServe{}, false
	}
	if role == upgrade.Active && r.activeReadCanWait(s) {
		s.reads[rc.Name] = serveRead{skipped: true}
		return status.ClusterServe{Keep: true}, true
	}
	client, err := r.dashboardFor(ctx, rc)
	if err != nil {
		log.Info("No dashboard to talk to", "rayCluster", rc.Name, "error", err.Error())
		s.reads[rc.Name] = serveRead{failed: true}
		return status.ClusterServe{Keep: true, Problem: fmt.Sprintf("RayCluster %s: %v", rc.Name, err)}, false
	}
	details, err := client.ServeDetails(ctx)
	if err != nil {
		r.tokens.forgetIfRejected(rc, err)
		s.reads[rc.Name] = serveRead{failed: true}
		r.eventf(s.rs, rc, corev1.EventTypeWarning, reasonFailedToGetServeApps,
			"Failed to get Serve application statuses from the RayCluster %s/%s: %v", rc.Namespace, rc.Name, err)
		return status.ClusterServe{Keep: true,
			Problem: fmt.Sprintf("failed to get Serve application statuses from RayCluster %s: %v", rc.Name, err)}, false
	}
	s.dashboards[role] = client
	apps, ready := serve.Applications(details)
	s.serveReplicas[rc.Name] = serveRunning(details)
	s.reads[rc.Name] = serveRead{at: r.clock.Now(), running: ready}
	failing := serve.Failing(apps)
	r.reportFailing(s, role, rc, failing)
	problem := failingProblem(rc, failing)

	last, submitted := r.configs.Get(s.key, rc.Name)
	submit, why := serve.NeedsSubmit(last, submitted, s.rs.Spec.ServeConfigV2, len(apps))
	if role == upgrade.Active && s.incrementalInProgress() {
		submit = false
	}
	if !submit {
		return status.ClusterServe{Apps: apps, Problem: problem}, ready
	}
	log.Info("Submitting Serve config", "rayCluster", rc.Name, "reason", why)
	if err := r.submit(ctx, s, role, client); err != nil {
		r.tokens.forgetIfRejected(rc, err)
		s.reads[rc.Name] = serveRead{at: r.clock.Now(), failed: true}
		r.eventf(s.rs, rc, corev1.EventTypeWarning, reasonFailedToUpdateServeApps,
			"Failed to update serve applications to the RayCluster %s/%s: %v", rc.Namespace, rc.Name, err)
		return status.ClusterServe{Apps: apps, Problem: joinProblems(problem,
			fmt.Sprintf("failed to update Serve applications on RayCluster %s (see %s): %v", rc.Name, troubleshootingURL, err))}, false
	}
	r.eventf(s.rs, rc, corev1.EventTypeNormal, reasonUpdatedServeApps,
		"Updated serve applications to the RayCluster %s/%s", rc.Namespace, rc.Name)
	return status.ClusterServe{Apps: apps, Problem: problem}, ready
}

// reportFailing records a Warning event for each application of rc that has just turned
// DEPLOY_FAILED or UNHEALTHY, one the status last recorded in another state: once per
// transition, so a spoke restart or a failure that lasts adds none.
func (r *Reconciler) reportFailing(s *scope, role upgrade.Role, rc *rayv1.RayCluster, failing []serve.FailingApp) {
	recorded := s.statusOf(role).Applications
	if s.statusOf(role).RayClusterName != rc.Name {
		recorded = nil
	}
	for _, app := range failing {
		if prev, ok := recorded[app.Name]; ok && prev.Status == app.Status {
			continue
		}
		r.eventf(s.rs, rc, corev1.EventTypeWarning, reasonServeAppFailed,
			"Serve application %s on the RayCluster %s/%s is %s: %s", app.Name, rc.Namespace, rc.Name, app.Status, app.Message)
	}
}

// failingProblem is the condition message part naming rc's failing applications; "" when none
// fails.
func failingProblem(rc *rayv1.RayCluster, failing []serve.FailingApp) string {
	parts := make([]string, 0, len(failing))
	for _, app := range failing {
		parts = append(parts, fmt.Sprintf("Serve application %s on RayCluster %s is %s: %s", app.Name, rc.Name, app.Status, app.Message))
	}
	return strings.Join(parts, "; ")
}

// submit PUTs the RayService's Serve config to the cluster playing role, with the
// target_capacity the status records for it during an incremental upgrade, and remembers it.
func (r *Reconciler) submit(ctx context.Context, s *scope, role upgrade.Role, client dashboard.Client) error {
	rc := s.cluster(role)
	var capacity *int32
	if s.incremental {
		capacity = s.statusOf(role).TargetCapacity
	}
	body, err := serve.ConfigJSON(s.rs.Spec.ServeConfigV2, capacity)
	if err != nil {
		return err
	}
	if err := client.UpdateDeployments(ctx, body); err != nil {
		return err
	}
	r.configs.Put(s.key, rc.Name, serve.Submitted{Config: s.rs.Spec.ServeConfigV2, TargetCapacity: copyInt32(capacity)})
	r.polls.noteSubmit(s.rs, r.clock.Now())
	return nil
}

// dashboardFor returns a client of rc's dashboard, found through rc's head Service (port
// "dashboard") and carrying the cluster's auth token when token auth is on.
func (r *Reconciler) dashboardFor(ctx context.Context, rc *rayv1.RayCluster) (dashboard.Client, error) {
	name, err := builder.HeadServiceName(rc)
	if err != nil {
		return nil, err
	}
	var svc corev1.Service
	if err = r.client.Get(ctx, client.ObjectKey{Namespace: rc.Namespace, Name: name}, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("head Service %s not found", name)
		}
		return nil, fmt.Errorf("get head Service %s/%s: %w", rc.Namespace, name, err)
	}
	port, ok := builder.DashboardPort(&svc)
	if !ok {
		return nil, fmt.Errorf("head Service %s has no port named dashboard", name)
	}
	token, err := r.tokens.get(ctx, rc)
	if err != nil {
		return nil, err
	}
	return r.factory.Dashboard(r.resolver.DashboardURL(rc, &svc, port), token), nil
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
