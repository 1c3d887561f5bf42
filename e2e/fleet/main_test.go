//go:build e2e

// Package fleet runs RayFleet end to end on a local fleet (see shared/localfleet): a hub control
// plane running bin/hub, and three members (regions us, eu and ap, two kwok Nodes each, GPUs on
// eu only) each running bin/spoke against a Ray dashboard stand-in, joined with `rayfleet join`.
// The ap member is for the tests that stop and start its API server (outages, failover,
// flapping; one at a time, see holdMember): every other test places by region on us and eu
// only.
// The members' API servers keep an audit log of RayService writes (memberAuditPolicy), so that
// tests can count the hub's writes of its copies.
// It imports only shared/ (the local fleet and test helpers), never hub/, spoke/ or cmd/.
//
//	make build && go test -tags e2e ./e2e/fleet/   # binaries from bin/ and bin/k8s
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …         # keep the state dir (logs) afterwards
package fleet

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// Shared Eventually settings: generous for a small shared machine; a healthy run needs a few
// seconds per step.
const (
	timeout = 90 * time.Second
	poll    = 250 * time.Millisecond
)

// The members: CPU-only ones in regions us and ap, and a GPU one in region eu.
const (
	memberUS   = "us"
	memberEU   = "eu"
	memberAP   = "ap"
	regionKey  = "region"
	gpusPerEU  = 4
	nodesPerMb = 2
)

// fleet is what TestMain starts for all tests.
var fleet *localfleet.Fleet

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	start := time.Now()
	f, err := localfleet.Start(context.Background(), localfleet.Options{
		Members: []localfleet.MemberSpec{
			{
				Name:   memberUS,
				Labels: map[string]string{regionKey: memberUS},
				Nodes:  localcluster.FakeNodes(nodesPerMb, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"}),
			},
			{
				Name:   memberEU,
				Labels: map[string]string{regionKey: memberEU},
				Nodes:  localcluster.FakeNodes(nodesPerMb, localcluster.NodeSpec{CPU: "32", Memory: "128Gi", GPUs: gpusPerEU}),
			},
			{
				Name:   memberAP,
				Labels: map[string]string{regionKey: memberAP},
				Nodes:  localcluster.FakeNodes(nodesPerMb, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"}),
			},
		},
		KeepState:         os.Getenv("RAYFLEET_E2E_KEEP") != "",
		MemberAuditPolicy: memberAuditPolicy,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/fleet: starting the local fleet:", err)
		return 1
	}
	fleet = f
	defer func() {
		begin := time.Now()
		f.Stop()
		fmt.Fprintf(os.Stderr, "e2e/fleet: stopped in %v\n", time.Since(begin).Round(time.Millisecond))
	}()
	fmt.Fprintf(os.Stderr, "e2e/fleet: hub and %d members up and joined in %v (state in %s)\n",
		len(f.Members), time.Since(start).Round(time.Millisecond), f.Dir)

	code := m.Run()
	if err := f.Exited(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e/fleet: an agent exited during the tests:", err)
		code = 1
	}
	if code != 0 {
		f.DumpLogs(os.Stderr, 150)
	}
	return code
}

// eventually polls check until it passes, the shared timeout expires or an agent dies.
func eventually(t *testing.T, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := fleet.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}
