package membership

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// metrics are the per-member gauges and the readmission counter; a deleted MemberCluster's
// series are removed.
type metrics struct {
	ready        *prometheus.GaugeVec
	heartbeatAge *prometheus.GaugeVec
	readmissions *prometheus.CounterVec
	credExpiry   *prometheus.GaugeVec
	// allocatable and free are the member's reported capacity by resource, in the resource's
	// base unit (cores, bytes, devices).
	allocatable *prometheus.GaugeVec
	free        *prometheus.GaugeVec

	mu sync.Mutex
	// resources are, per member, the resource names last exported, so that a resource the
	// member stops reporting loses its series.
	resources map[string]map[corev1.ResourceName]bool
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_member_ready",
			Help: "1 when the member cluster's Ready condition is True, else 0.",
		}, []string{"member"}),
		heartbeatAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_member_heartbeat_age_seconds",
			Help: "Age of the member's last ClusterReport heartbeat seen by the hub, in seconds.",
		}, []string{"member"}),
		readmissions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rayfleet_member_readmissions_total",
			Help: "Times the member cluster's Ready condition turned True again after being False, once it had been Ready before (a return from an outage, not its first join).",
		}, []string{"cluster"}),
		credExpiry: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_member_credential_expiry_timestamp_seconds",
			Help: "When the bootstrap token of the member's kubeconfig Secret expires (its exp claim), in seconds since the epoch; absent when it carries no expiry. Re-run rayfleet join before then.",
		}, []string{"member"}),
		allocatable: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_member_capacity_allocatable",
			Help: "The member's allocatable resources from its ClusterReport (schedulable, Ready Nodes), by resource, in its base unit (cores, bytes, devices).",
		}, []string{"member", "resource"}),
		free: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rayfleet_member_capacity_free",
			Help: "The member's allocatable resources minus the requests of its running Pods, from its ClusterReport, by resource, in its base unit.",
		}, []string{"member", "resource"}),
		resources: map[string]map[corev1.ResourceName]bool{},
	}
	for _, c := range []prometheus.Collector{m.ready, m.heartbeatAge, m.readmissions, m.credExpiry, m.allocatable, m.free} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering membership metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) observe(name string, st *fleetv1alpha1.MemberClusterStatus, now time.Time) {
	ready := 0.0
	if meta.IsStatusConditionTrue(st.Conditions, fleetv1alpha1.ConditionReady) {
		ready = 1
	}
	m.ready.WithLabelValues(name).Set(ready)
	// A member's series exists at 0 before its first readmission, so that increase() sees it.
	m.readmissions.WithLabelValues(name)
	if hb := st.LastHeartbeatObservedTime; hb != nil {
		m.heartbeatAge.WithLabelValues(name).Set(now.Sub(hb.Time).Seconds())
	} else {
		m.heartbeatAge.DeleteLabelValues(name)
	}
	if c := st.Credentials; c != nil && c.BootstrapExpiry != nil {
		m.credExpiry.WithLabelValues(name).Set(float64(c.BootstrapExpiry.Unix()))
	} else {
		m.credExpiry.DeleteLabelValues(name)
	}
	m.capacity(name, st.Capacity)
}

// capacity exports the member's reported capacity and drops the resources it no longer reports.
func (m *metrics) capacity(name string, c *fleetv1alpha1.ClusterCapacity) {
	now := map[corev1.ResourceName]bool{}
	if c != nil {
		for r, q := range c.Allocatable {
			m.allocatable.WithLabelValues(name, string(r)).Set(q.AsApproximateFloat64())
			now[r] = true
		}
		for r, q := range c.Free {
			m.free.WithLabelValues(name, string(r)).Set(q.AsApproximateFloat64())
			now[r] = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for r := range m.resources[name] {
		if !now[r] {
			m.allocatable.DeleteLabelValues(name, string(r))
			m.free.DeleteLabelValues(name, string(r))
		}
	}
	if c != nil {
		for r := range c.Allocatable {
			if _, ok := c.Free[r]; !ok {
				m.free.DeleteLabelValues(name, string(r))
			}
		}
		for r := range c.Free {
			if _, ok := c.Allocatable[r]; !ok {
				m.allocatable.DeleteLabelValues(name, string(r))
			}
		}
	}
	m.resources[name] = now
}

// readmitted counts one return of the member from an outage.
func (m *metrics) readmitted(name string) {
	m.readmissions.WithLabelValues(name).Inc()
}

func (m *metrics) forget(name string) {
	m.ready.DeleteLabelValues(name)
	m.heartbeatAge.DeleteLabelValues(name)
	m.readmissions.DeleteLabelValues(name)
	m.credExpiry.DeleteLabelValues(name)
	m.allocatable.DeletePartialMatch(prometheus.Labels{"member": name})
	m.free.DeletePartialMatch(prometheus.Labels{"member": name})
	m.mu.Lock()
	delete(m.resources, name)
	m.mu.Unlock()
}
