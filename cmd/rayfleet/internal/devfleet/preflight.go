package devfleet

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// tools are what the control planes run from Config.K8sBin (kwok-stages.yaml is kwok's stage
// definitions, rendered by `make tools`).
var tools = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "kwok-stages.yaml"}

// trafficTools are what --traffic runs from Config.K8sBin besides tools.
var trafficTools = []string{"traefik"}

// agents are RayFleet's binaries the fleet runs from Config.Bin.
var agents = []string{"hub", "spoke"}

// crdFiles are files `make manifests` writes that a fleet cannot work without, by directory
// under the repository root (Gateway API's are checked as a directory of YAML files).
var crdFiles = map[string][]string{
	hubCRDDir:   {"ray.io_rayservices.yaml", "fleet.rayfleet.io_memberclusters.yaml", "fleet.rayfleet.io_namespacegrants.yaml", "fleet.rayfleet.io_placementpolicies.yaml"},
	spokeCRDDir: {"ray.io_rayclusters.yaml", "ray.io_rayservices.yaml", "fleet.rayfleet.io_clusterreports.yaml"},
}

// Preflight checks, before anything starts, that `dev up` can work: the tools, bin/hub and
// bin/spoke and the CRDs are where c says, no dev fleet runs from c's state directory, and the
// API server ports are free. It reports every problem at once, one per line, except that a
// running fleet is reported alone (it holds the ports).
func Preflight(c Config) error {
	if err := checkNotRunning(Layout{Dir: c.StateDir}); err != nil {
		return err
	}
	var errs []error
	errs = append(errs, checkTools(c)...)
	errs = append(errs, checkAgents(c)...)
	errs = append(errs, checkCRDs(c)...)
	errs = append(errs, checkPorts(c)...)
	errs = append(errs, checkRealNodes(c)...)
	if len(errs) > 1 {
		return problems(errs)
	}
	return errors.Join(errs...)
}

// problems are several preflight errors, shown as a list.
type problems []error

func (p problems) Error() string {
	msg := fmt.Sprintf("%d problems:", len(p))
	for _, err := range p {
		msg += "\n  - " + err.Error()
	}
	return msg
}

func (p problems) Unwrap() []error { return p }

// checkNotRunning fails when the state directory's supervisor is alive.
func checkNotRunning(l Layout) error {
	r, err := ReadRecord(l.SupervisorPIDFile())
	if err != nil || !r.Alive() {
		return nil //nolint:nilerr // no readable pid file: nothing runs from this state dir
	}
	return fmt.Errorf("a dev fleet is already running (pid %d, state in %s); `rayfleet dev down` first", r.PID, l.Dir)
}

func checkTools(c Config) []error {
	if c.K8sBin == "" {
		return []error{errors.New("no directory of Kubernetes tools: run `make tools` in a clone of the repository " +
			"and run rayfleet dev there, or pass --k8s-bin")}
	}
	var errs []error
	need := tools
	if c.Traffic {
		need = append(slices.Clone(tools), trafficTools...)
	}
	for _, t := range need {
		if !isFile(filepath.Join(c.K8sBin, t)) {
			errs = append(errs, fmt.Errorf("%s not found in %s: run `make tools` (or pass --k8s-bin)", t, c.K8sBin))
		}
	}
	return errs
}

func checkAgents(c Config) []error {
	var errs []error
	for _, a := range agents {
		if !isFile(filepath.Join(c.Bin, a)) {
			errs = append(errs, fmt.Errorf("%s not found in %s: run `make build` (or pass --bin)", a, c.Bin))
		}
	}
	return errs
}

func checkCRDs(c Config) []error {
	if c.Root == "" {
		wd, _ := os.Getwd()
		return []error{fmt.Errorf("RayFleet's CRDs (%s, %s) not found above %s or %s: rayfleet dev reads them "+
			"from a clone of the repository; run it inside one", hubCRDDir, spokeCRDDir, wd, filepath.Dir(c.CLI))}
	}
	var errs []error
	for _, dir := range []string{hubCRDDir, spokeCRDDir} {
		for _, f := range crdFiles[dir] {
			if path := filepath.Join(c.Root, dir, f); !isFile(path) {
				errs = append(errs, fmt.Errorf("CRD %s not found: run `make manifests`", path))
			}
		}
	}
	if files, _ := filepath.Glob(filepath.Join(c.Root, gatewayCRDDir, "*.yaml")); len(files) == 0 {
		errs = append(errs, fmt.Errorf("no Gateway API CRDs in %s: run `make manifests`", filepath.Join(c.Root, gatewayCRDDir)))
	}
	return errs
}

// checkPorts fails for every API server port (and with Traffic the gateway's) something
// listens on.
func checkPorts(c Config) []error {
	names := ClusterNames()
	what := make([]string, len(names))
	for i, name := range names {
		what[i] = apiServerOf(name)
	}
	if c.Traffic {
		what = append(what, "the hub's Gateway") // at GatewayPort, right after the API servers
	}
	if last := c.BasePort + len(what) - 1; c.BasePort < 1 || last > 65535 {
		return []error{fmt.Errorf("--base-port %d: the ports %d to %d must lie in 1-65535", c.BasePort, c.BasePort, last)}
	}
	var errs []error
	for i, w := range what {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port(i)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s) is in use; stop what listens there or pass --base-port", addr, w))
			continue
		}
		_ = l.Close()
	}
	return errs
}

// apiServerOf names a cluster's API server in messages.
func apiServerOf(cluster string) string {
	if cluster == HubName {
		return "kube-apiserver of the hub"
	}
	return "kube-apiserver of member " + cluster
}

// checkRealNodes checks what --real-nodes (and --ray) needs: root, the node tools, the
// programs of nodePrograms, and the images the Nodes import.
func checkRealNodes(c Config) []error {
	if !c.RealNodes {
		return nil
	}
	var errs []error
	if os.Geteuid() != 0 {
		errs = append(errs, fmt.Errorf("%s needs root (network namespaces, mounts, cgroups)", c.realNodesFlag()))
	}
	if missing := localcluster.MissingNodeTools(c.K8sBin); len(missing) > 0 {
		errs = append(errs, fmt.Errorf("node tools %v not found in %s: run `make node-tools`", missing, c.K8sBin))
	}
	for _, p := range nodePrograms {
		if _, err := exec.LookPath(p.bin); err != nil {
			errs = append(errs, fmt.Errorf("%s needs %s on PATH (Debian's %s package)", c.realNodesFlag(), p.bin, p.pkg))
		}
	}
	for _, img := range c.nodeImages() {
		target := "make image"
		if img == c.rayImage() {
			target = "make ray-image"
		}
		if _, err := localcluster.ArchiveImageName(img); err != nil {
			errs = append(errs, fmt.Errorf("%w: run `%s`", err, target))
		}
	}
	return errs
}

// nodePrograms are what real Nodes and their network namespaces run from PATH, with the
// Debian package of each.
var nodePrograms = []struct{ bin, pkg string }{
	{"runc", "runc"}, {"iptables", "iptables"}, {"ip", "iproute2"}, {"nsenter", "util-linux"},
}

// realNodesFlag is the flag that asked for real Nodes, for messages.
func (c Config) realNodesFlag() string {
	if c.Ray {
		return "--ray"
	}
	return "--real-nodes"
}
