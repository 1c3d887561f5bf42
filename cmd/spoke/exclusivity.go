package main

import (
	"fmt"
	"os"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rayfleet/rayfleet/spoke/exclusivity"
)

// inClusterNamespaceFile holds the Pod's namespace when the spoke runs in a cluster.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// fallbackNamespace holds the claim of a spoke run outside any cluster without
// --leader-election-namespace (the local fleet).
const fallbackNamespace = "default"

// setupExclusivity adds the Claimer that keeps this spoke from fighting KubeRay's operator or
// a second spoke over the member's ray.io objects, and returns the gate the reconcilers obey.
func setupExclusivity(mgr ctrl.Manager, f flags, getenv func(string) string) (*exclusivity.Gate, *exclusivity.Claimer, error) {
	watch, err := f.manager.Namespaces()
	if err != nil {
		return nil, nil, err
	}
	gate := exclusivity.NewGate(nil, exclusivity.DefaultInterval)
	claimer, err := exclusivity.NewClaimer(exclusivity.ClaimerOptions{
		Identity: exclusivity.Identity{
			Namespace:       spokeNamespace(f.manager.LeaderElectionNamespace, getenv, os.ReadFile),
			Name:            claimName(f.manager.LeaderElect, f.manager.LeaderElectionID, os.Hostname),
			WatchNamespaces: watch,
		},
		Client: mgr.GetClient(),
		Reader: mgr.GetAPIReader(),
		Gate:   gate,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("setting up the check for another controller: %w", err)
	}
	if err := mgr.Add(claimer); err != nil {
		return nil, nil, fmt.Errorf("adding the check for another controller: %w", err)
	}
	return gate, claimer, nil
}

// spokeNamespace is where the spoke keeps its claim: the leader-election namespace (the chart
// sets it to the release's), else the Pod's, else fallbackNamespace.
func spokeNamespace(leaderElectionNamespace string, getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if leaderElectionNamespace != "" {
		return leaderElectionNamespace
	}
	if ns := getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := readFile(inClusterNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
		return strings.TrimSpace(string(b))
	}
	return fallbackNamespace
}

// claimName tells this installation from others in its namespace. With leader election, the
// replicas of one installation share the leader-election ID, and a new leader carries the claim
// on; two installations in one namespace with the same ID share the leader-election Lease too,
// so only one of them runs anyway. Without it, nothing keeps two processes apart, so the host
// name (the Pod's name) is added: during a rollout the new Pod waits for the old one to go.
func claimName(leaderElect bool, leaderElectionID string, hostname func() (string, error)) string {
	if leaderElect {
		return leaderElectionID
	}
	if h, err := hostname(); err == nil && h != "" {
		return leaderElectionID + "/" + h
	}
	return leaderElectionID
}
