package dashboard

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	sharedmetrics "github.com/rayfleet/rayfleet/shared/metrics"
)

// Values of the result label.
const (
	resultSuccess = "success"
	resultError   = "error"
)

// metrics counts and times the requests of a factory's clients. A nil *metrics records nothing.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// newMetrics registers the request metrics on reg, or returns nil when reg is nil. A second
// factory on the same registry (tests, a restarted manager in one process) shares the series
// already registered instead of failing.
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	requests, err := sharedmetrics.RegisterOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rayfleet_spoke_dashboard_requests_total",
		Help: "Requests from the spoke to Ray dashboards and Serve proxies, by operation and result.",
	}, []string{"operation", "result"}), "dashboard client metrics")
	if err != nil {
		return nil, err
	}
	duration, err := sharedmetrics.RegisterOrReuse(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rayfleet_spoke_dashboard_request_duration_seconds",
		Help: "Duration of the spoke's requests to Ray dashboards and Serve proxies, failed ones included, by operation.",
		// Up to the default 2 s timeout and a little past it, for a longer configured one.
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5},
	}, []string{"operation"}), "dashboard client metrics")
	if err != nil {
		return nil, err
	}
	// Every series exists from the start, so that a rate over an error counter that never moved
	// reads 0 rather than nothing.
	for _, op := range []string{opUpdateDeployments, opServeDetails, opProxyHealth} {
		requests.WithLabelValues(op, resultSuccess)
		requests.WithLabelValues(op, resultError)
		duration.WithLabelValues(op)
	}
	return &metrics{requests: requests, duration: duration}, nil
}

// observe records one request of operation op that took d and ended with err.
func (m *metrics) observe(op string, d time.Duration, err error) {
	if m == nil {
		return
	}
	result := resultSuccess
	if err != nil {
		result = resultError
	}
	m.requests.WithLabelValues(op, result).Inc()
	m.duration.WithLabelValues(op).Observe(d.Seconds())
}
