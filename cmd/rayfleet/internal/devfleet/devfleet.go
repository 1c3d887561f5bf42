// Package devfleet is `rayfleet dev`: a local fleet to try RayFleet out on one machine. It
// starts a hub and two members (us: CPU Nodes, eu: GPU Nodes) with shared/localfleet — real
// etcd and kube-apiserver pairs on loopback, kwok playing the Nodes, a Ray dashboard stand-in
// per member, bin/hub and a bin/spoke per member, joined with `rayfleet join` — applies a
// sample PlacementPolicy and RayService, and waits until the hub reports the RayService Ready.
// With Config.Traffic the hub also runs Traefik serving a Gateway, each member a load balancer
// stand-in, and a second sample (a BlueGreen rollout with traffic) is applied. With Config.Ray
// the members run real Ray on real Nodes, the traffic path runs in a network namespace bridged
// to the host's loopback, and the Ray sample (shared/localfleet/rayapp's Serve app) is the only
// one: the gateway answers from Ray on 127.0.0.1.
//
// Everything the fleet needs lives in one state directory (see Layout): the logs, a pid file per
// process, admin kubeconfigs and fleet.json, so that `dev status` and `dev down` find a fleet
// that `dev up --detach` left running in the background.
//
// It imports shared/ (above all shared/localfleet) and fleetstatus, never hub/ or spoke/: the
// fleet runs their binaries.
package devfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// DefaultBasePort is the hub's API server port; the members' follow it (us, then eu). Fixed
// ports keep the kubeconfigs valid from one `dev up` to the next.
const DefaultBasePort = 16443

// HubName is the hub's name in the state directory (kubeconfigs, logs, pid files).
const HubName = "hub"

// Where the CRDs are in a clone of the repository: `make manifests` generates the charts' and
// copies Gateway API's.
const (
	hubCRDDir     = "charts/rayfleet-hub/crds"
	spokeCRDDir   = "charts/rayfleet-spoke/crds"
	gatewayCRDDir = "e2e/testdata/gateway-api"
)

// member is one member of the dev fleet.
type member struct {
	name   string
	labels map[string]string
	nodes  []localcluster.NodeSpec
}

// members are the dev fleet's members, in port order after the hub: two regions, so that the
// sample PlacementPolicy (clusters: 2, spreadBy: region) places the RayService on both, and
// GPUs on eu only, so that `rayfleet status` shows free accelerators on one member.
var members = []member{
	{name: "us", labels: map[string]string{"region": "us"},
		nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"})},
	{name: "eu", labels: map[string]string{"region": "eu"},
		nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "32", Memory: "128Gi", GPUs: 4})},
}

// ClusterNames are the hub's and the members' names, in the order of their API server ports.
func ClusterNames() []string {
	names := []string{HubName}
	for _, m := range members {
		names = append(names, m.name)
	}
	return names
}

// Config says where everything is. Resolve fills in what the command line left empty.
type Config struct {
	// StateDir holds the fleet's state (see Layout).
	StateDir string
	// BasePort is the hub's API server port; member i listens on BasePort+1+i.
	BasePort int
	// K8sBin holds etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok and
	// kwok-stages.yaml.
	K8sBin string
	// Bin holds bin/hub and bin/spoke.
	Bin string
	// CLI is the rayfleet binary: it joins the members and is the detached supervisor.
	CLI string
	// Root is the repository clone the CRDs are read from; empty when none was found.
	Root string
	// Keep leaves the state directory behind when a foreground fleet stops.
	Keep bool
	// Traffic gives the fleet a traffic path (Traefik serving the hub's Gateway gateway/fleet
	// on GatewayPort, a load balancer stand-in per member on its serve IP) and applies the
	// traffic sample too.
	Traffic bool
	// RealNodes gives the hub and each member one real Node (kubelet, containerd, runc) in a
	// network namespace of its own, with the images in <Bin>/images imported; root only.
	RealNodes bool
	// Ray runs real Ray: only the members get a real Node, holding the Ray image, and no kwok
	// Nodes; Traefik and the load balancers run in a network namespace of their own, so that
	// the gateway answers on the host; and the only sample is the Ray sample. Resolve turns on
	// RealNodes and Traffic with it.
	Ray bool
}

// DefaultStateDir is ${XDG_STATE_HOME:-$HOME/.local/state}/rayfleet/dev.
func DefaultStateDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the default state dir: %w (pass --state-dir)", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "rayfleet", "dev"), nil
}

// Resolve fills in the defaults: the state dir, the base port, the rayfleet binary
// (os.Executable), Bin (its directory when it holds bin/hub, else $RAYFLEET_BIN), the
// repository clone (above the working directory, else above the binary) and K8sBin
// ($RAYFLEET_K8S_BIN, else <clone>/bin/k8s). Paths are made absolute: a detached supervisor
// gets them on its command line.
func Resolve(c Config) (Config, error) {
	var err error
	if c.StateDir == "" {
		if c.StateDir, err = DefaultStateDir(); err != nil {
			return c, err
		}
	}
	if c.BasePort == 0 {
		c.BasePort = DefaultBasePort
	}
	if c.Ray {
		c.RealNodes, c.Traffic = true, true
	}
	if c.CLI == "" {
		if c.CLI, err = os.Executable(); err != nil {
			return c, fmt.Errorf("finding the rayfleet binary: %w", err)
		}
	}
	if c.Bin == "" {
		c.Bin = defaultBin(filepath.Dir(c.CLI))
	}
	if c.Root == "" {
		c.Root = findRoot(filepath.Dir(c.CLI))
	}
	if c.K8sBin == "" {
		c.K8sBin = os.Getenv("RAYFLEET_K8S_BIN")
	}
	if c.K8sBin == "" && c.Root != "" {
		c.K8sBin = filepath.Join(c.Root, "bin", "k8s")
	}
	for _, p := range []*string{&c.StateDir, &c.K8sBin, &c.Bin, &c.Root} {
		if *p == "" {
			continue
		}
		if *p, err = filepath.Abs(*p); err != nil {
			return c, fmt.Errorf("resolving %s: %w", *p, err)
		}
	}
	return c, nil
}

// defaultBin is the rayfleet binary's directory when bin/hub is next to it (bin/ of a clone
// after `make build`), else $RAYFLEET_BIN when set, else that directory anyway (and the
// preflight says to run `make build`).
func defaultBin(exeDir string) string {
	if isFile(filepath.Join(exeDir, "hub")) {
		return exeDir
	}
	if d := os.Getenv("RAYFLEET_BIN"); d != "" {
		return d
	}
	return exeDir
}

// findRoot returns the first directory holding the hub chart's CRDs above the working
// directory, or else above exeDir (bin/rayfleet of a clone run from elsewhere); "" if none.
func findRoot(exeDir string) string {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range append(starts, exeDir) {
		for {
			if isDir(filepath.Join(dir, hubCRDDir)) {
				return dir
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return ""
}

// port is the API server port of the i-th cluster of ClusterNames.
func (c Config) port(i int) int { return c.BasePort + i }

// GatewayPort is the port of the hub's Gateway with Traffic: the one after the members' API
// servers, fixed like theirs so that the gateway URL stays the same from one run to the next.
func (c Config) GatewayPort() int { return c.BasePort + len(ClusterNames()) }

// gatewayURL is where the hub's Gateway serves with Traffic.
func (c Config) gatewayURL() string { return "http://127.0.0.1:" + strconv.Itoa(c.GatewayPort()) }

// serveIP is the address the load balancer stand-in of the i-th member gives LoadBalancer
// Services: 10.99.0.<i+1>, which a network namespace can put on its loopback interface (the API
// server refuses loopback addresses in the EndpointSlices the hub writes for them).
func serveIP(i int) string { return "10.99.0." + strconv.Itoa(i+1) }

// serveIPs are every member's serve IP by name.
func serveIPs() map[string]string {
	ips := map[string]string{}
	for i, m := range members {
		ips[m.name] = serveIP(i)
	}
	return ips
}

// server is the API server URL of the i-th cluster of ClusterNames.
func (c Config) server(i int) string { return "https://127.0.0.1:" + strconv.Itoa(c.port(i)) }

// fleetOptions are the localfleet options of the dev fleet; onStart records every process.
func (c Config) fleetOptions(l Layout, onStart func(string, *localcluster.Process)) localfleet.Options {
	opts := localfleet.Options{
		BinDir:           c.K8sBin,
		RayFleetBin:      c.Bin,
		CLI:              c.CLI,
		StateDir:         l.ClustersDir(),
		KeepState:        true, // the state directory as a whole is ours to remove
		LogDir:           l.LogDir(),
		HubAPIServerPort: c.port(0),
		HubCRDDirs:       []string{filepath.Join(c.Root, hubCRDDir)},
		MemberCRDDirs:    []string{filepath.Join(c.Root, spokeCRDDir), filepath.Join(c.Root, gatewayCRDDir)},
		OnStart:          onStart,
	}
	for i, m := range members {
		spec := localfleet.MemberSpec{Name: m.name, Labels: m.labels, Nodes: m.nodes, APIServerPort: c.port(i + 1)}
		if c.Ray {
			spec.Nodes = nil // Ray's Pods must land on the real Node
		}
		opts.Members = append(opts.Members, spec)
	}
	if c.Traffic {
		// The hub writes HTTPRoutes there and Traefik serves its Gateway.
		opts.HubCRDDirs = append(opts.HubCRDDirs, filepath.Join(c.Root, gatewayCRDDir))
		opts.Traffic = &localfleet.TrafficOptions{ServeIPs: serveIPs(), GatewayPort: c.GatewayPort(), Isolated: c.Ray}
	}
	if c.RealNodes {
		// Preflight checked the archive; a name it cannot read fails the Node's start instead.
		sandbox, _ := localcluster.ArchiveImageName(c.pauseImage())
		opts.RealNodes = &localfleet.RealNodes{Images: c.nodeImages(), SandboxImage: sandbox, Ray: c.Ray}
	}
	return opts
}

// nodeImages are the archives real Nodes import: the pause image, and the Ray image with Ray
// or else RayFleet's.
func (c Config) nodeImages() []string {
	if c.Ray {
		return []string{c.pauseImage(), c.rayImage()}
	}
	return []string{c.pauseImage(), c.rayfleetImage()}
}

// pauseImage and rayfleetImage are the archives `make image` writes, rayImage the one `make
// ray-image` writes.
func (c Config) pauseImage() string    { return filepath.Join(c.Bin, "images", "pause.tar") }
func (c Config) rayfleetImage() string { return filepath.Join(c.Bin, "images", "rayfleet.tar") }
func (c Config) rayImage() string      { return filepath.Join(c.Bin, "images", "ray.tar") }

func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
