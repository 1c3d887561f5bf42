package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/-/healthz":
			_, _ = w.Write([]byte("success"))
		case r.Method == http.MethodPut:
			http.Error(w, "bad config", http.StatusBadRequest)
		default:
			_, _ = w.Write([]byte(`{"applications":{}}`))
		}
	}))
	t.Cleanup(srv.Close)

	reg := prometheus.NewPedanticRegistry()
	f := newTestFactory(t, FactoryOptions{Registerer: reg})
	// A second factory on the same registry shares the series.
	f2 := newTestFactory(t, FactoryOptions{Registerer: reg})

	ctx := context.Background()
	_ = f.Dashboard(srv.URL, "").UpdateDeployments(ctx, []byte(`{}`))
	_ = f2.Dashboard(srv.URL, "").UpdateDeployments(ctx, []byte(`{}`))
	_, _ = f.Dashboard(srv.URL, "").ServeDetails(ctx)
	_ = f.CheckProxyHealth(ctx, srv.URL)
	_ = f.CheckProxyHealth(ctx, "http://[::1") // an error before any request is sent counts too

	m := f.(*factory).metrics
	wantCounts := []struct {
		op, result string
		want       float64
	}{
		{opUpdateDeployments, resultSuccess, 0},
		{opUpdateDeployments, resultError, 2},
		{opServeDetails, resultSuccess, 1},
		{opServeDetails, resultError, 0},
		{opProxyHealth, resultSuccess, 1},
		{opProxyHealth, resultError, 1},
	}
	for _, w := range wantCounts {
		if got := testutil.ToFloat64(m.requests.WithLabelValues(w.op, w.result)); got != w.want {
			t.Errorf("requests_total{operation=%q,result=%q} = %v, want %v", w.op, w.result, got, w.want)
		}
	}
	// Three histograms (one per operation) plus six counters, all present from the start.
	if n, err := testutil.GatherAndCount(reg,
		"rayfleet_spoke_dashboard_requests_total", "rayfleet_spoke_dashboard_request_duration_seconds"); err != nil || n != 9 {
		t.Errorf("GatherAndCount = %d, %v; want 9 series", n, err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	wantObservations := map[string]uint64{opUpdateDeployments: 2, opServeDetails: 1, opProxyHealth: 2}
	for _, fam := range families {
		if fam.GetName() != "rayfleet_spoke_dashboard_request_duration_seconds" {
			continue
		}
		for _, metric := range fam.GetMetric() {
			op := metric.GetLabel()[0].GetValue()
			if got := metric.GetHistogram().GetSampleCount(); got != wantObservations[op] {
				t.Errorf("duration{operation=%q} count = %d, want %d", op, got, wantObservations[op])
			}
		}
	}
}

func TestNoMetricsWithoutRegisterer(t *testing.T) {
	f := newTestFactory(t, FactoryOptions{})
	if m := f.(*factory).metrics; m != nil {
		t.Errorf("metrics = %v without a Registerer", m)
	}
	// A nil *metrics records nothing and does not panic.
	_ = f.CheckProxyHealth(context.Background(), "http://[::1")
}

// TestRegisterConflict: a different collector under the metric's name is an error.
func TestRegisterConflict(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "rayfleet_spoke_dashboard_requests_total", Help: "squatter",
	}))
	if _, err := NewFactory(FactoryOptions{Registerer: reg}); err == nil {
		t.Error("no error when the metric name is taken by another collector")
	}
}
