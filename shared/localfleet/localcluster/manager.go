package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
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
// and /metrics answer. A manager that exits because a port was taken between the pick and its
// bind (another fleet on the machine) is started again on new ports.
func (c *Cluster) StartManager(ctx context.Context, name, bin, kubeconfig string, args, env []string) (*Manager, error) {
	for try := 1; ; try++ {
		m, err := c.startManager(ctx, name, bin, kubeconfig, args, env)
		if err == nil || try == managerTries || !errors.Is(err, errPortTaken) {
			return m, err
		}
	}
}

// managerTries bounds the starts of one manager whose ports were taken.
const managerTries = 3

// errPortTaken is a manager exiting because a port it was given was in use.
var errPortTaken = errors.New("a port it was given is in use")

// startManager is one try of StartManager.
func (c *Cluster) startManager(ctx context.Context, name, bin, kubeconfig string, args, env []string) (*Manager, error) {
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
	// The health server may answer for the moment before the metrics listener fails: ready
	// means both answer and the process still runs.
	for _, url := range []string{m.HealthURL + "/readyz", m.MetricsURL} {
		if err = waitHTTP(ctx, p, http.DefaultClient, url); err != nil {
			break
		}
	}
	if exited, _ := p.Exited(); err == nil && exited {
		err = fmt.Errorf("%s exited", name)
	}
	if err != nil {
		log := tail(p.LogPath, 40)
		if strings.Contains(log, "address already in use") {
			err = fmt.Errorf("%s: %w: %w", name, errPortTaken, err)
		}
		return nil, fmt.Errorf("%s did not become ready: %w\n%s", name, err, log)
	}
	return m, nil
}
