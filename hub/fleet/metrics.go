package fleet

// Phase: status. The reconciler's metrics.

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	sharedmetrics "github.com/rayfleet/rayfleet/shared/metrics"
)

// metrics are the reconciler's Prometheus metrics. A nil *metrics records nothing.
type metrics struct {
	decisions *prometheus.CounterVec
	clusters  *prometheus.GaugeVec
	latency   prometheus.Histogram
	refusals  *prometheus.CounterVec
	failovers *prometheus.CounterVec
	// phase, updated and duration describe the fleet rollouts.
	phase   *prometheus.GaugeVec
	updated *prometheus.GaugeVec
	// green is rayfleet_bluegreen_green_percent, capacity rayfleet_bluegreen_capacity_percent.
	green    *prometheus.GaugeVec
	capacity *prometheus.GaugeVec
	duration prometheus.Histogram

	mu sync.Mutex
	// observed is, per hub RayService and cluster, the member status lastUpdateTime already
	// counted in latency: a status seen again on a resync is not a new change.
	observed map[types.NamespacedName]map[string]time.Time
}

// newMetrics registers the metrics on reg; metrics already registered (a second reconciler in
// one process, as in tests) are shared.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rayfleet_placement_decisions_total",
			Help: "Placement decisions by result: placed, partial, none, policy_not_found, policy_invalid, reservation_misfit (held: a member it chose filled up meanwhile, planned again).",
		}, []string{"result"}),
		clusters: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_rayservice_clusters",
			Help: "Number of member clusters a hub RayService is placed on.",
		}, []string{"namespace", "name"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rayfleet_member_status_latency_seconds",
			Help:    "Time from a member RayService's status lastUpdateTime to the hub status write reflecting it.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rayfleet_member_refusals_total",
			Help: "Copies a member's API server refused, by member and rule (hubPolicy/<rule>, NamespaceTerminating, RequestTooLarge, Invalid).",
		}, []string{"cluster", "rule"}),
		failovers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rayfleet_failovers_total",
			Help: "RayServices that left a member because it stayed not Ready past their failover toleration, by member.",
		}, []string{"cluster"}),
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_rollout_phase",
			Help: "1, labelled with the phase a hub RayService's fleet rollout is in (Progressing, Paused, AwaitingApproval, Stalled, RollingBack, Complete); the other phases have no series.",
		}, []string{"namespace", "name", "phase"}),
		updated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_rollout_clusters_updated",
			Help: "Placed clusters done on a hub RayService's target revision.",
		}, []string{"namespace", "name"}),
		green: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_bluegreen_green_percent",
			Help: "Share of a hub RayService's traffic its BlueGreen rollout gives green (0-100); absent when none is in flight.",
		}, []string{"namespace", "name"}),
		capacity: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_bluegreen_capacity_percent",
			Help: "Capacity a BlueGreen rollout whose capacity follows the traffic gives each colour, in percent of its full set (0-100); absent otherwise.",
		}, []string{"namespace", "name", "color"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "rayfleet_rollout_duration_seconds",
			Help:    "Time from a fleet rollout's start to its completion (rolled back ones included).",
			Buckets: prometheus.ExponentialBuckets(5, 2, 12),
		}),
		observed: map[types.NamespacedName]map[string]time.Time{},
	}
	var err error
	if m.decisions, err = sharedmetrics.RegisterOrReuse(reg, m.decisions, "hub metrics"); err != nil {
		return nil, err
	}
	if m.clusters, err = sharedmetrics.RegisterOrReuse(reg, m.clusters, "hub metrics"); err != nil {
		return nil, err
	}
	if m.latency, err = sharedmetrics.RegisterOrReuse(reg, m.latency, "hub metrics"); err != nil {
		return nil, err
	}
	if m.refusals, err = sharedmetrics.RegisterOrReuse(reg, m.refusals, "hub metrics"); err != nil {
		return nil, err
	}
	if m.failovers, err = sharedmetrics.RegisterOrReuse(reg, m.failovers, "hub metrics"); err != nil {
		return nil, err
	}
	if m.phase, err = sharedmetrics.RegisterOrReuse(reg, m.phase, "hub metrics"); err != nil {
		return nil, err
	}
	if m.updated, err = sharedmetrics.RegisterOrReuse(reg, m.updated, "hub metrics"); err != nil {
		return nil, err
	}
	if m.duration, err = sharedmetrics.RegisterOrReuse(reg, m.duration, "hub metrics"); err != nil {
		return nil, err
	}
	if m.green, err = sharedmetrics.RegisterOrReuse(reg, m.green, "hub metrics"); err != nil {
		return nil, err
	}
	if m.capacity, err = sharedmetrics.RegisterOrReuse(reg, m.capacity, "hub metrics"); err != nil {
		return nil, err
	}
	return m, nil
}

// decision counts a placement decision.
func (m *metrics) decision(result string) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(result).Inc()
}

// refused counts a member's refusal of a copy.
func (m *metrics) refused(cluster, rule string) {
	if m == nil {
		return
	}
	m.refusals.WithLabelValues(cluster, rule).Inc()
}

// failover counts a RayService leaving a member that stayed not Ready.
func (m *metrics) failover(cluster string) {
	if m == nil {
		return
	}
	m.failovers.WithLabelValues(cluster).Inc()
}

// rolloutPhases are the values of rayfleet_rollout_phase's phase label.
var rolloutPhases = []fleetv1alpha1.RolloutPhase{
	fleetv1alpha1.RolloutProgressing, fleetv1alpha1.RolloutPaused, fleetv1alpha1.RolloutAwaitingApproval,
	fleetv1alpha1.RolloutStalled, fleetv1alpha1.RolloutRollingBack, fleetv1alpha1.RolloutComplete,
}

// rollout records a rollout decision: its phase, the clusters updated, and, when it completes
// now, how long it took.
func (m *metrics) rollout(key types.NamespacedName, binding *fleetv1alpha1.RayServiceBinding, plan *rollout.Decision) {
	if m == nil {
		return
	}
	// One series per RayService, the phase it is in: six (five of them 0) cost 30 MB at 10,000
	// RayServices.
	for _, p := range rolloutPhases {
		if p != plan.Status.Phase {
			m.phase.DeleteLabelValues(key.Namespace, key.Name, string(p))
		}
	}
	if plan.Status.Phase != "" {
		m.phase.WithLabelValues(key.Namespace, key.Name, string(plan.Status.Phase)).Set(1)
	}
	done := 0
	for _, p := range plan.Phases {
		if p.Phase == fleetv1alpha1.ClusterDone {
			done++
		}
	}
	m.updated.WithLabelValues(key.Namespace, key.Name).Set(float64(done))
	if bg := plan.Status.BlueGreen; bg != nil {
		m.green.WithLabelValues(key.Namespace, key.Name).Set(float64(bg.GreenPercent))
	} else {
		m.green.DeleteLabelValues(key.Namespace, key.Name)
	}
	if c := plan.Capacity; c != nil {
		m.capacity.WithLabelValues(key.Namespace, key.Name, string(fleetv1alpha1.ColorGreen)).Set(float64(c.Green))
		m.capacity.WithLabelValues(key.Namespace, key.Name, string(fleetv1alpha1.ColorBlue)).Set(float64(c.Blue))
	} else {
		m.forgetCapacity(key)
	}
	var before fleetv1alpha1.RolloutPhase
	if binding != nil && binding.Status.Rollout != nil {
		before = binding.Status.Rollout.Phase
	}
	st := plan.Status
	if st.Phase == fleetv1alpha1.RolloutComplete && before != fleetv1alpha1.RolloutComplete && before != "" &&
		st.StartTime != nil && st.CompletionTime != nil {
		m.duration.Observe(st.CompletionTime.Sub(st.StartTime.Time).Seconds())
	}
}

// placed sets how many clusters a RayService is placed on.
func (m *metrics) placed(key types.NamespacedName, n int) {
	if m == nil {
		return
	}
	m.clusters.WithLabelValues(key.Namespace, key.Name).Set(float64(n))
}

// statusWritten observes, for every member copy whose status changed since last counted, the
// time from its lastUpdateTime to now, the hub status write.
func (m *metrics) statusWritten(key types.NamespacedName, copies map[string]*rayv1.RayService, now time.Time) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.observed[key]
	if seen == nil {
		seen = map[string]time.Time{}
		m.observed[key] = seen
	}
	for cluster, member := range copies {
		if member == nil || member.Status.LastUpdateTime == nil {
			continue
		}
		updated := member.Status.LastUpdateTime.Time
		if last, ok := seen[cluster]; ok && !updated.After(last) {
			continue
		}
		seen[cluster] = updated
		m.latency.Observe(max(now.Sub(updated).Seconds(), 0))
	}
}

// forget drops what is kept for a RayService that is gone.
func (m *metrics) forget(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.clusters.DeleteLabelValues(key.Namespace, key.Name)
	m.updated.DeleteLabelValues(key.Namespace, key.Name)
	m.green.DeleteLabelValues(key.Namespace, key.Name)
	m.forgetCapacity(key)
	for _, p := range rolloutPhases {
		m.phase.DeleteLabelValues(key.Namespace, key.Name, string(p))
	}
	m.mu.Lock()
	delete(m.observed, key)
	m.mu.Unlock()
}

// forgetCapacity drops the colours' capacity of a RayService whose capacity no longer moves.
func (m *metrics) forgetCapacity(key types.NamespacedName) {
	for _, c := range []fleetv1alpha1.Color{fleetv1alpha1.ColorGreen, fleetv1alpha1.ColorBlue} {
		m.capacity.DeleteLabelValues(key.Namespace, key.Name, string(c))
	}
}
