//go:build e2e

// Package fleetray runs the fleet's rollouts on members that run real Ray: two members, each
// with one real Node (kubelet, containerd, runc, CNI and kube-proxy in a network namespace; see
// localfleet.RealNodes with Ray) holding `make ray-image`'s Ray, and their spokes reaching Ray
// at its in-cluster addresses through a node proxy. The tests share one fleet, each in a
// namespace of its own:
//
//   - TestBlueGreenOnRealRay: a cross-cluster blue/green through the hub's Gateway (Traefik),
//     which routes to each member's serve IP, where the member's load balancer stand-in
//     forwards to the serve Service inside the Node's namespace: every answer through the
//     Gateway is Ray Serve's own, none may fail, and green answers its share at every step.
//   - TestRollingOnRealRay: a Rolling rollout over both members, each done only once Ray
//     reports the application RUNNING; an application raising at import stalls at the first
//     member, is rolled back there and never reaches the second.
//   - TestCapacityFollowsTraffic: the same blue/green with whole sets and with capacity that
//     follows the traffic, side by side, on a RayService whose GPU workers run on fake GPU
//     Nodes (kwok) beside each member's real Node: the GPUs the fleet holds are sampled, and
//     with capacity their peak stays within the surge.
//
// The serve IPs are not loopback addresses (see e2e/bluegreen), so TestMain runs the package
// in a network namespace of its own with them on its loopback interface; the Nodes' namespaces
// are made from there. Without root, the node tools, runc or the images the tests skip.
// Figures: RESULTS.md.
//
//	make build image ray-image node-tools && go test -tags e2e ./e2e/fleetray/
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …   # keep the state dir (logs) afterwards
package fleetray

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// The members, one region each.
const (
	memberEast = "east"
	memberWest = "west"
	regionKey  = "region"
)

// members are the members, in the order their serve IPs are numbered.
var members = []string{memberEast, memberWest}

// serveIPs are the members' serve IPs, on the package's network namespace's loopback.
var serveIPs = map[string]string{memberEast: "10.98.0.1", memberWest: "10.98.0.2"}

// skipReason, when set, is why the tests cannot run here (found before the namespace is made).
var skipReason string

func TestMain(m *testing.M) {
	if localfleet.InNetworkNamespace() {
		code := m.Run()
		stopFleet()
		os.Exit(code)
	}
	if skipReason = missing(); skipReason != "" {
		os.Exit(m.Run())
	}
	os.Exit(localfleet.RunInNetworkNamespace("e2e/fleetray", slices.Collect(maps.Values(serveIPs))))
}

// missing says what this machine lacks for real Nodes, "" when nothing.
func missing() string {
	if os.Geteuid() != 0 {
		return "real Nodes need root (network namespaces, cgroups, mounts)"
	}
	binDir := localcluster.DefaultBinDir()
	if tools := localcluster.MissingNodeTools(binDir); len(tools) > 0 {
		return fmt.Sprintf("node tools %v missing from %s (make node-tools)", tools, binDir)
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return "runc not on PATH (Debian's runc package)"
	}
	images := filepath.Join(localfleet.DefaultRayFleetBin(), "images")
	for _, tar := range []string{"pause.tar", "ray.tar"} {
		if _, err := os.Stat(filepath.Join(images, tar)); err != nil {
			return fmt.Sprintf("%s missing from %s (make image ray-image)", tar, images)
		}
	}
	return ""
}
