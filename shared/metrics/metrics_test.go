package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRegisterOrReuse(t *testing.T) {
	reg := prometheus.NewRegistry()
	newCounter := func() *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"l"})
	}
	first, err := RegisterOrReuse(reg, newCounter(), "x")
	if err != nil {
		t.Fatalf("first registration: %v", err)
	}
	second, err := RegisterOrReuse(reg, newCounter(), "x")
	if err != nil {
		t.Fatalf("second registration: %v", err)
	}
	if first != second {
		t.Errorf("the second registration did not reuse the first collector")
	}
	// The same name with other labels is another description: an error naming the metrics.
	other := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "x"}, []string{"m"})
	if _, err := RegisterOrReuse(reg, other, "the x metrics"); err == nil {
		t.Errorf("registering x_total with other labels succeeded")
	} else if got := err.Error(); len(got) < len("register the x metrics") || got[:len("register the x metrics")] != "register the x metrics" {
		t.Errorf("error %q does not name the metrics", got)
	}
	// A gauge under a counter's name is not the collector registered: an error.
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "x_total", Help: "x"}, []string{"l"})
	if _, err := RegisterOrReuse(reg, gauge, "x"); err == nil {
		t.Errorf("registering a gauge under a counter's name succeeded")
	}
}
