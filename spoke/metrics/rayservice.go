package metrics

import (
	"context"
	"fmt"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RayServiceMetrics exports KubeRay's RayService metrics, all computed at scrape time from the
// RayServices in the informer cache (see RayClusterMetrics for why they are collected rather
// than kept as gauges):
//
//   - kuberay_service_info{name,namespace,uid};
//   - kuberay_service_condition_ready{name,namespace,uid,condition}: whether Ready is True;
//   - kuberay_service_condition_upgrade_in_progress{name,namespace,uid,condition}: whether
//     UpgradeInProgress is True.
//
// The condition series always have the value 1; the condition label carries "true" or "false".
type RayServiceMetrics struct {
	info                       *prometheus.Desc
	conditionReady             *prometheus.Desc
	conditionUpgradeInProgress *prometheus.Desc
	reader                     client.Reader
	log                        logr.Logger
}

// NewRayServiceMetrics builds the RayService metrics over reader (the manager's cache) and
// registers them on reg (controller-runtime's metrics.Registry in production).
func NewRayServiceMetrics(reg prometheus.Registerer, reader client.Reader) (*RayServiceMetrics, error) {
	series := []string{"name", "namespace", "uid", "condition"}
	m := &RayServiceMetrics{
		info: prometheus.NewDesc("kuberay_service_info",
			"Metadata information about RayService custom resources",
			[]string{"name", "namespace", "uid"}, nil),
		conditionReady: prometheus.NewDesc("kuberay_service_condition_ready",
			"Describes whether the RayService is ready. Ready means users can send requests to the underlying cluster and the number of serve endpoints is greater than 0.",
			series, nil),
		conditionUpgradeInProgress: prometheus.NewDesc("kuberay_service_condition_upgrade_in_progress",
			"Describes whether the RayService is performing a zero-downtime upgrade.",
			series, nil),
		reader: reader,
		log:    ctrl.Log.WithName("metrics").WithName("rayservice"),
	}
	if err := reg.Register(m); err != nil {
		return nil, fmt.Errorf("register RayService metrics: %w", err)
	}
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *RayServiceMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.info
	ch <- m.conditionReady
	ch <- m.conditionUpgradeInProgress
}

// Collect implements prometheus.Collector. A failed cache read is logged and leaves the
// RayService series out of this scrape rather than failing the whole scrape.
func (m *RayServiceMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var list rayv1.RayServiceList
	// Read only: the cache's objects may be shared rather than copied.
	if err := m.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		m.log.Error(err, "List RayServices for metrics")
		return
	}
	for i := range list.Items {
		rs := &list.Items[i]
		uid := string(rs.UID)
		ch <- prometheus.MustNewConstMetric(m.info, prometheus.GaugeValue, 1, rs.Name, rs.Namespace, uid)
		ch <- prometheus.MustNewConstMetric(m.conditionReady, prometheus.GaugeValue, 1, rs.Name, rs.Namespace, uid,
			conditionTrue(rs, rayv1.RayServiceReady))
		ch <- prometheus.MustNewConstMetric(m.conditionUpgradeInProgress, prometheus.GaugeValue, 1, rs.Name, rs.Namespace, uid,
			conditionTrue(rs, rayv1.UpgradeInProgress))
	}
}

// conditionTrue is "true" when rs's condition of type t is True, else "false" (also when unset).
func conditionTrue(rs *rayv1.RayService, t rayv1.RayServiceConditionType) string {
	return strconv.FormatBool(meta.IsStatusConditionTrue(rs.Status.Conditions, string(t)))
}
