// Package metrics exports the spoke's Prometheus metrics under KubeRay's names, labels and help
// texts, so dashboards and alerts built for KubeRay keep working against RayFleet.
// Of the repository it imports only shared/labels: never hub/ or the reconcilers, which import
// it.
package metrics

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Label values KubeRay uses.
const (
	// ownerKindNone is kuberay_cluster_info's owner_kind for a RayCluster created directly.
	ownerKindNone = "None"
)

// listTimeout bounds the cache read of one scrape; an informer cache answers at once once
// synced, so hitting it means the cache is not running and the scrape should not hang on it.
const listTimeout = 5 * time.Second

// RayClusterMetrics exports KubeRay's RayCluster metrics:
//
//   - kuberay_cluster_provisioned_duration_seconds{name,namespace,uid}: set by the reconciler
//     (ObserveProvisioned) when RayClusterProvisioned turns True;
//   - kuberay_cluster_info{name,namespace,uid,owner_kind} and
//     kuberay_cluster_condition_provisioned{name,namespace,uid,condition}: computed at scrape
//     time from the RayClusters in the informer cache.
//
// The last two are collected rather than kept as gauges, as KubeRay does: a scrape every few
// seconds lists the cache (no API call, no deep copy) while gauges would cost work in every
// reconcile, go stale when labels change, and miss clusters the reconciler skips (those
// managed by another controller, or invalid), which KubeRay still reports.
//
// ObserveProvisioned and Forget do nothing on a nil receiver, so a reconciler may run without
// metrics.
type RayClusterMetrics struct {
	provisionedDuration  *prometheus.GaugeVec
	info                 *prometheus.Desc
	conditionProvisioned *prometheus.Desc
	reader               client.Reader
	log                  logr.Logger
}

// NewRayClusterMetrics builds the RayCluster metrics over reader (the manager's cache) and
// registers them on reg (controller-runtime's metrics.Registry in production).
func NewRayClusterMetrics(reg prometheus.Registerer, reader client.Reader) (*RayClusterMetrics, error) {
	m := &RayClusterMetrics{
		provisionedDuration: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "kuberay_cluster_provisioned_duration_seconds",
			Help: "The time, in seconds, when a RayCluster's `RayClusterProvisioned` status transitions from false (or unset) to true",
		}, []string{"name", "namespace", "uid"}),
		info: prometheus.NewDesc("kuberay_cluster_info",
			"Metadata information about RayCluster custom resources",
			[]string{"name", "namespace", "uid", "owner_kind"}, nil),
		conditionProvisioned: prometheus.NewDesc("kuberay_cluster_condition_provisioned",
			"Indicates whether the RayCluster is provisioned",
			[]string{"name", "namespace", "uid", "condition"}, nil),
		reader: reader,
		log:    ctrl.Log.WithName("metrics").WithName("raycluster"),
	}
	if err := reg.Register(m); err != nil {
		return nil, fmt.Errorf("register RayCluster metrics: %w", err)
	}
	return m, nil
}

// ObserveProvisioned records how long rc took to be provisioned, normally the time from its
// creation. Call it once per transition of RayClusterProvisioned to True, after the status
// write that records it succeeded (status.BecameProvisioned tells when).
func (m *RayClusterMetrics) ObserveProvisioned(rc *rayv1.RayCluster, d time.Duration) {
	if m == nil {
		return
	}
	m.provisionedDuration.WithLabelValues(rc.Name, rc.Namespace, string(rc.UID)).Set(d.Seconds())
}

// Forget drops the series of a deleted RayCluster, whatever its uid. The collected series need
// no forgetting: they disappear with the cluster from the cache.
func (m *RayClusterMetrics) Forget(name, namespace string) {
	if m == nil {
		return
	}
	m.provisionedDuration.DeletePartialMatch(prometheus.Labels{"name": name, "namespace": namespace})
}

// Describe implements prometheus.Collector.
func (m *RayClusterMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.provisionedDuration.Describe(ch)
	ch <- m.info
	ch <- m.conditionProvisioned
}

// Collect implements prometheus.Collector. A failed cache read is logged and leaves out the
// collected series for this scrape rather than failing the whole scrape.
func (m *RayClusterMetrics) Collect(ch chan<- prometheus.Metric) {
	m.provisionedDuration.Collect(ch)

	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var list rayv1.RayClusterList
	// Read only: the cache's objects may be shared rather than copied.
	if err := m.reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		m.log.Error(err, "List RayClusters for metrics")
		return
	}
	for i := range list.Items {
		rc := &list.Items[i]
		ch <- prometheus.MustNewConstMetric(m.info, prometheus.GaugeValue, 1,
			rc.Name, rc.Namespace, string(rc.UID), ownerKind(rc))
		ch <- prometheus.MustNewConstMetric(m.conditionProvisioned, prometheus.GaugeValue, 1,
			rc.Name, rc.Namespace, string(rc.UID), strconv.FormatBool(
				meta.IsStatusConditionTrue(rc.Status.Conditions, string(rayv1.RayClusterProvisioned))))
	}
}

// ownerKind is the kind of the custom resource that created rc (RayService, RayJob), or "None".
func ownerKind(rc *rayv1.RayCluster) string {
	if kind, ok := rc.Labels[labels.OriginatedFromCRD]; ok {
		return kind
	}
	return ownerKindNone
}
