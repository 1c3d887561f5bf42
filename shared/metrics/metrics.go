// Package metrics holds what the hub's and the spoke's Prometheus metrics share.
package metrics

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// RegisterOrReuse registers c on reg, or returns the collector of the same description reg
// already holds: two controllers of one kind in one process (tests, a second manager) share
// their series instead of failing. what names the metrics in the error.
func RegisterOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C, what string) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, same := are.ExistingCollector.(C); same {
			return existing, nil
		}
	}
	return c, fmt.Errorf("register %s: %w", what, err)
}
