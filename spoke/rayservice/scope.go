package rayservice

import (
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/rayservice/status"
	"github.com/rayfleet/rayfleet/spoke/rayservice/upgrade"
)

// scope is what one reconcile of one RayService read and decided, shared by its phases.
type scope struct {
	// rs is the RayService the phases work on. Its status carries the changes phases make
	// before the status is computed (target capacities submitted, the rollback condition).
	rs *rayv1.RayService
	// original is the RayService as read, the base of the status patch.
	original *rayv1.RayService
	// key names rs; the serve-config cache is keyed by it.
	key types.NamespacedName
	// incremental says rs upgrades with NewClusterWithIncrementalUpgrade.
	incremental bool

	// active and pending are the clusters named in the status; nil when missing.
	active, pending *rayv1.RayCluster

	// activeServe and pendingServe are what the dashboards said; activeReady and pendingReady
	// whether every application of the cluster is RUNNING.
	activeServe, pendingServe status.ClusterServe
	activeReady, pendingReady bool
	// dashboards are the clients of the dashboards read this reconcile, by role; a
	// target_capacity change goes through them.
	dashboards map[upgrade.Role]dashboard.Client
	// reads says what became of each cluster's Serve read this reconcile, by cluster name.
	reads map[string]serveRead
	// serveReplicas are the RUNNING Serve replicas per "<application>/<deployment>" of each
	// cluster whose Serve read succeeded this reconcile, by cluster name.
	serveReplicas map[string]map[string]int32
	// activeCanWait caches activeReadCanWait; nil until decided.
	activeCanWait *bool
	// nextDeletion is the earliest time a dangling cluster is due for deletion; zero when
	// none waits.
	nextDeletion time.Time

	// weights are the HTTPRoute weights after this reconcile; nil without a route.
	weights *upgrade.Weights

	// servicesReconciled says the head and serve Services were pointed at a ready cluster;
	// headSelects and serveSelects name the clusters they select.
	servicesReconciled        bool
	headSelects, serveSelects string

	// activeEndpoints and pendingEndpoints are the ready serve endpoints of each cluster.
	activeEndpoints, pendingEndpoints int32

	// conflicts name the objects left alone because something else controls them; nil until
	// a step that writes such objects ran (see noteOwnership).
	conflicts []string
}

func newScope(rs *rayv1.RayService) *scope {
	return &scope{
		rs:            rs,
		original:      rs.DeepCopy(),
		key:           types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name},
		incremental:   rayspec.IncrementalUpgrade(&rs.Spec),
		dashboards:    map[upgrade.Role]dashboard.Client{},
		reads:         map[string]serveRead{},
		serveReplicas: map[string]map[string]int32{},
	}
}

// cluster returns the cluster playing role.
func (s *scope) cluster(role upgrade.Role) *rayv1.RayCluster {
	switch role {
	case upgrade.Active:
		return s.active
	case upgrade.Pending:
		return s.pending
	default:
		return nil
	}
}

// serveOf returns where role's Serve findings are kept.
func (s *scope) serveOf(role upgrade.Role) *status.ClusterServe {
	if role == upgrade.Active {
		return &s.activeServe
	}
	return &s.pendingServe
}

// statusOf returns role's part of the working status.
func (s *scope) statusOf(role upgrade.Role) *rayv1.RayServiceStatus {
	if role == upgrade.Active {
		return &s.rs.Status.ActiveServiceStatus
	}
	return &s.rs.Status.PendingServiceStatus
}

// incrementalInProgress says an incremental upgrade is moving traffic between two clusters.
func (s *scope) incrementalInProgress() bool {
	return s.incremental && upgrade.UpgradeInProgress(&s.rs.Status)
}

// noteDeletion records that a dangling cluster is due for deletion at at.
func (s *scope) noteDeletion(at time.Time) {
	if s.nextDeletion.IsZero() || at.Before(s.nextDeletion) {
		s.nextDeletion = at
	}
}
