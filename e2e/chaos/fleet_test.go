//go:build e2e

package chaos

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// The members every scenario's fleet has: us and ap (CPU only) and eu (GPUs), each with two
// kwok Nodes, labelled region=<name>.
const (
	memberUS   = "us"
	memberEU   = "eu"
	memberAP   = "ap"
	regionKey  = "region"
	nodesPerMb = 2
)

// memberAuditPolicy logs every write of RayServices, RayClusters and Pods on a member, status
// included (no bodies), so that a scenario can count who wrote what during and after a fault.
const memberAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
  resources:
  - group: ray.io
    resources: [rayservices, rayservices/status, rayclusters, rayclusters/status]
  - group: ""
    resources: [pods]
- level: None
`

// Shared waits: generous, the machine is small and shared.
const (
	timeout = 3 * time.Minute
	poll    = 250 * time.Millisecond
)

// startFleet starts a fresh fleet for one scenario (hub and members us, eu, ap), with modify
// adjusting its options first (nil: none). Every scenario has its own fleet: a fault leaves
// nothing behind for the next one. The fleet is stopped when the test ends, its logs printed
// if the test failed; RAYFLEET_E2E_KEEP=1 keeps its state directory.
func startFleet(t *testing.T, modify func(*localfleet.Options)) *localfleet.Fleet {
	t.Helper()
	opts := localfleet.Options{
		Members: []localfleet.MemberSpec{
			{Name: memberUS, Labels: map[string]string{regionKey: memberUS},
				Nodes: localcluster.FakeNodes(nodesPerMb, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"})},
			{Name: memberEU, Labels: map[string]string{regionKey: memberEU},
				Nodes: localcluster.FakeNodes(nodesPerMb, localcluster.NodeSpec{CPU: "32", Memory: "128Gi", GPUs: 4})},
			{Name: memberAP, Labels: map[string]string{regionKey: memberAP},
				Nodes: localcluster.FakeNodes(nodesPerMb, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"})},
		},
		KeepState:         os.Getenv("RAYFLEET_E2E_KEEP") != "",
		MemberAuditPolicy: memberAuditPolicy,
	}
	if modify != nil {
		modify(&opts)
	}
	start := time.Now()
	f, err := localfleet.Start(context.Background(), opts)
	if err != nil {
		t.Fatalf("starting the local fleet: %v", err)
	}
	t.Logf("fleet up in %v (state in %s)", time.Since(start).Round(time.Millisecond), f.Dir)
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpLogs(os.Stderr, 150)
		}
		f.Stop()
	})
	return f
}

// eventually polls check until it passes or within expires.
func eventually(t *testing.T, within time.Duration, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(check).WithTimeout(within).WithPolling(poll).Should(gomega.Succeed())
}

// consistently checks that check keeps passing for the whole of d.
func consistently(t *testing.T, d time.Duration, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Consistently(check).WithTimeout(d).WithPolling(poll).Should(gomega.Succeed())
}
