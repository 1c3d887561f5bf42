package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// The operators the benchmark can measure. Both run as processes with the same client
// identity (spokebench.SpokeUser), so the audit log counts either one's writes the same way.
const (
	operatorSpoke = "spoke"
	// operatorKubeRay is KubeRay's own operator, built by the user (it is not part of the
	// repository): its flags and CRDs differ from the spoke's.
	operatorKubeRay = "kuberay"
)

// kubeRayModule is the module whose config/crd/bases holds the RayJob CRD KubeRay's operator
// watches; the spoke's chart installs only RayCluster and RayService.
const kubeRayModule = "github.com/ray-project/kuberay/ray-operator"

// readyTimeout bounds how long an operator may take to answer /readyz.
const readyTimeout = 2 * time.Minute

// operator is the controller under test and how to start it.
type operator struct {
	kind string
	bin  string
	args []string
}

// newOperator resolves the -operator, -operator-bin and -operator-args flags; -spoke and
// -spoke-args are the spoke's older spelling of the last two.
func newOperator(cfg config) (operator, error) {
	switch cfg.operator {
	case operatorSpoke:
		bin, args := cfg.operatorBin, cfg.operatorArgs
		if bin == "" {
			bin = cfg.SpokeBin
		}
		if args == "" {
			args = cfg.SpokeArgs
		}
		return operator{kind: operatorSpoke, bin: bin, args: strings.Fields(args)}, nil
	case operatorKubeRay:
		if cfg.operatorBin == "" {
			return operator{}, errors.New("-operator kuberay needs -operator-bin, KubeRay's operator binary")
		}
		return operator{kind: operatorKubeRay, bin: cfg.operatorBin, args: strings.Fields(cfg.operatorArgs)}, nil
	}
	return operator{}, fmt.Errorf("-operator %q: want %s or %s", cfg.operator, operatorSpoke, operatorKubeRay)
}

// crdDirs returns the CRD directories the operator needs beyond the spoke's.
func (o operator) crdDirs(ctx context.Context) ([]string, error) {
	if o.kind != operatorKubeRay {
		return nil, nil
	}
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", kubeRayModule).Output()
	if err != nil {
		return nil, fmt.Errorf("finding %s in the module cache for its CRDs: %w", kubeRayModule, err)
	}
	return []string{filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "bases")}, nil
}

// start runs the operator against cluster as the client of kubeconfig and waits until it is
// ready.
func (o operator) start(ctx context.Context, cluster *localcluster.Cluster, kubeconfig string) (*localcluster.Manager, error) {
	if o.kind == operatorSpoke {
		return cluster.StartManager(ctx, "spoke", o.bin, kubeconfig, o.args, nil)
	}
	// KubeRay names its metrics flag differently from controller-runtime's scaffolding and
	// elects a leader by default, which needs a namespace it only knows in a Pod.
	metricsPort, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	healthPort, err := localcluster.FreePort()
	if err != nil {
		return nil, err
	}
	m := &localcluster.Manager{
		MetricsURL: "http://127.0.0.1:" + strconv.Itoa(metricsPort) + "/metrics",
		HealthURL:  "http://127.0.0.1:" + strconv.Itoa(healthPort),
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--metrics-addr=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort),
		"--enable-leader-election=false",
	}, o.args...)
	if m.Process, err = cluster.StartProcess(o.kind, o.bin, args, []string{"KUBECONFIG=" + kubeconfig}); err != nil {
		return nil, err
	}
	if err := waitReady(ctx, m); err != nil {
		return nil, fmt.Errorf("%s did not become ready (log: %s): %w", o.kind, m.LogPath, err)
	}
	return m, nil
}

// waitReady polls the manager's /readyz until it answers 200 or the process exits.
func waitReady(ctx context.Context, m *localcluster.Manager) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, readyTimeout, true, func(ctx context.Context) (bool, error) {
		if exited, err := m.Exited(); exited {
			return false, fmt.Errorf("exited: %w", errors.Join(err, errors.New("see its log")))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.HealthURL+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet; keep polling
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
