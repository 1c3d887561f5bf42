package membership

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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
	}
	for _, c := range []prometheus.Collector{m.ready, m.heartbeatAge, m.readmissions, m.credExpiry} {
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
}
