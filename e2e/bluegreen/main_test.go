//go:build e2e

// Package bluegreen runs BlueGreen rollouts end to end on a local fleet with a real traffic
// path (see shared/localfleet): a hub running bin/hub, with Traefik serving the hub's Gateway
// gateway/fleet, and three members (regions us, eu and ap) each running bin/spoke and a load
// balancer stand-in that answers on the member's serve IP with the member's name and the
// revision it serves. Requests go through the Gateway for the whole of a rollout, so that the
// tests see which cluster and revision answered each one while the hub shifts the weights.
// The hub reaches each member's API server through a proxy the tests can cut (a partition in
// the network, chaos row 8), the members themselves running on.
//
// The serve IPs (10.99.0.1-3) are not loopback addresses: the API server refuses loopback
// addresses in EndpointSlices, and Traefik refuses ExternalName backends, so the hub's
// backends must point at addresses the stand-ins listen on. Nothing binds outside 127.0.0.1 on
// the host, so TestMain runs the package in a network namespace of its own (`unshare -n`,
// which needs root) with those addresses on its loopback interface.
//
// It imports only shared/ (the local fleet and test helpers), never hub/, spoke/ or cmd/.
//
//	make build && go test -tags e2e ./e2e/bluegreen/   # binaries from bin/ and bin/k8s
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …            # keep the state dir (logs) afterwards
//	RAYFLEET_E2E_BG_FIGURES=1 go test -tags e2e …      # also TestBlueGreenFigures
package bluegreen

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// The members, one region each.
const (
	memberUS  = "us"
	memberEU  = "eu"
	memberAP  = "ap"
	regionKey = "region"
)

// members are the three members, in the order their serve IPs are numbered.
var members = []string{memberUS, memberEU, memberAP}

// serveIPs are the members' serve IPs, which the network namespace puts on its loopback
// interface and each member's load balancer stand-in listens on.
var serveIPs = map[string]string{memberUS: "10.99.0.1", memberEU: "10.99.0.2", memberAP: "10.99.0.3"}

// Shared Eventually settings: generous for a small shared machine.
const (
	timeout = 90 * time.Second
	poll    = 250 * time.Millisecond
)

// heartbeatTimeout is the hub's --heartbeat-timeout: its membership probe (every 10 s) reads
// the heartbeat the spoke writes every 2 s, so a member whose API server stopped is found not
// Ready at the first probe that fails, within 10 s. At the default (40 s, or three failed
// probes 10 s apart) the hub took about 30 s, by which time a shift of 25 % every 10 s that
// green went down at had already given green everything: a paused shift could not be seen
// between 0 and 100 %.
const heartbeatTimeout = 10 * time.Second

// fleet is what TestMain starts for all tests.
var fleet *localfleet.Fleet

func TestMain(m *testing.M) {
	if !localfleet.InNetworkNamespace() {
		os.Exit(localfleet.RunInNetworkNamespace("e2e/bluegreen", slices.Collect(maps.Values(serveIPs))))
	}
	os.Exit(run(m))
}

// run starts the fleet, runs the tests and stops the fleet; inside the network namespace.
func run(m *testing.M) int {
	start := time.Now()
	specs := make([]localfleet.MemberSpec, 0, len(members))
	for _, name := range members {
		specs = append(specs, localfleet.MemberSpec{
			Name:   name,
			Labels: map[string]string{regionKey: name},
			Nodes:  localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"}),
			// TestPartitionKeepsServingMember partitions whichever member placement picks.
			Partitionable: true,
		})
	}
	f, err := localfleet.Start(context.Background(), localfleet.Options{
		Members:          specs,
		KeepState:        os.Getenv("RAYFLEET_E2E_KEEP") != "",
		HeartbeatTimeout: heartbeatTimeout,
		Traffic:          &localfleet.TrafficOptions{ServeIPs: serveIPs},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/bluegreen: starting the local fleet:", err)
		return 1
	}
	fleet = f
	defer func() {
		begin := time.Now()
		f.Stop()
		fmt.Fprintf(os.Stderr, "e2e/bluegreen: stopped in %v\n", time.Since(begin).Round(time.Millisecond))
	}()
	fmt.Fprintf(os.Stderr, "e2e/bluegreen: hub, Traefik and %d members up and joined in %v (gateway %s, state in %s)\n",
		len(f.Members), time.Since(start).Round(time.Millisecond), f.GatewayURL, f.Dir)

	code := m.Run()
	if err := f.Exited(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e/bluegreen: an agent exited during the tests:", err)
		code = 1
	}
	if code != 0 {
		f.DumpLogs(os.Stderr, 150)
	}
	return code
}

// eventuallyFor polls check until it passes, timeout expires or an agent dies.
func eventuallyFor(t *testing.T, timeout time.Duration, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := fleet.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// eventually is eventuallyFor with the shared timeout.
func eventually(t *testing.T, check func(g gomega.Gomega)) {
	t.Helper()
	eventuallyFor(t, timeout, check)
}
