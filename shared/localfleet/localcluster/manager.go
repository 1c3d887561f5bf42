package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// Manager is a controller-runtime manager binary (such as bin/spoke) running against a Cluster.
type Manager struct {
	*Process
	// MetricsURL serves the manager's Prometheus metrics.
	MetricsURL string
	// HealthURL is the base URL of the manager's /healthz and /readyz.
	HealthURL string
}

// StartManager runs bin with --kubeconfig, --metrics-bind-address and
// --health-probe-bind-address on free loopback ports, plus args, and waits until its /readyz
// answers.
func (c *Cluster) StartManager(ctx context.Context, name, bin, kubeconfig string, args, env []string) (*Manager, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	metrics := "127.0.0.1:" + strconv.Itoa(ports[0])
	health := "127.0.0.1:" + strconv.Itoa(ports[1])
	all := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-bind-address=" + metrics,
		"--health-probe-bind-address=" + health,
	}, args...)
	p, err := c.StartProcess(name, bin, all, append([]string{"KUBECONFIG=" + kubeconfig}, env...))
	if err != nil {
		return nil, err
	}
	m := &Manager{Process: p, MetricsURL: "http://" + metrics + "/metrics", HealthURL: "http://" + health}
	if err := waitHTTP(ctx, p, http.DefaultClient, m.HealthURL+"/readyz"); err != nil {
		return nil, fmt.Errorf("%s did not become ready: %w\n%s", name, err, tail(p.LogPath, 40))
	}
	return m, nil
}
