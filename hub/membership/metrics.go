package membership

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// metrics are the per-member gauges; a deleted MemberCluster's series are removed.
type metrics struct {
	ready        *prometheus.GaugeVec
	heartbeatAge *prometheus.GaugeVec
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
	}
	for _, c := range []prometheus.Collector{m.ready, m.heartbeatAge} {
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
	if hb := st.LastHeartbeatTime; hb != nil {
		m.heartbeatAge.WithLabelValues(name).Set(now.Sub(hb.Time).Seconds())
	} else {
		m.heartbeatAge.DeleteLabelValues(name)
	}
}

func (m *metrics) forget(name string) {
	m.ready.DeleteLabelValues(name)
	m.heartbeatAge.DeleteLabelValues(name)
}
