//go:build e2e

// Package fleetray runs a cross-cluster blue/green on a local fleet whose members run real
// Ray: two members, each with one real Node (kubelet, containerd, runc, CNI and kube-proxy in a
// network namespace; see localfleet.RealNodes with Ray) holding `make ray-image`'s Ray, and
// their spokes reaching Ray at its in-cluster addresses through a node proxy. The hub's
// Gateway (Traefik) routes to each member's serve IP, where the member's load balancer
// stand-in forwards to the serve Service inside the Node's namespace: every answer through
// the Gateway is Ray Serve's own.
//
// The serve IPs are not loopback addresses (see e2e/bluegreen), so TestMain runs the package
// in a network namespace of its own with them on its loopback interface; the Nodes' namespaces
// are made from there.
//
//	make build image ray-image && go test -tags e2e ./e2e/fleetray/
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
		os.Exit(m.Run())
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
