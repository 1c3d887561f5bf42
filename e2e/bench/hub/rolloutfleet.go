package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// spokeUser is the identity of bin/spoke on its member; the rollout benchmark's audit policy
// records its writes next to the hub's.
const spokeUser = localfleet.SpokeUser

// rolloutConfig is the command line of the rollout benchmark (-rollout).
type rolloutConfig struct {
	enabled     bool
	runs        int
	soakSeconds int
	steady      time.Duration
	deployDelay time.Duration
	nodes       int
	spokeBin    string
	spokeArgs   []string
}

// bindFlags registers the rollout benchmark's flags on fs; it returns the -spoke-args value,
// split after parsing.
func (c *rolloutConfig) bindFlags(fs *flag.FlagSet) *string {
	fs.BoolVar(&c.enabled, "rollout", false,
		"measure fleet rollouts of one RayService placed on every member, on a fleet with spokes, instead of placement")
	fs.IntVar(&c.runs, "runs", 3, "rollouts to measure (-rollout); fresh runs of the scale benchmark (-sim, default 1)")
	fs.IntVar(&c.soakSeconds, "soak-seconds", 10, "the policy's rollout.soakSeconds (-rollout)")
	fs.DurationVar(&c.steady, "steady", time.Minute, "how long the writes after each rollout are counted (-rollout); the steady state of the scale benchmark (-sim, default 5m)")
	fs.DurationVar(&c.deployDelay, "deploy-delay", localfleet.DefaultDashboardDeployDelay,
		"how long the Ray dashboard stand-ins take to bring a Serve config to RUNNING (-rollout)")
	fs.IntVar(&c.nodes, "nodes", 2, "kwok Nodes per member (-rollout)")
	fs.StringVar(&c.spokeBin, "spoke", filepath.Join(localfleet.DefaultRayFleetBin(), "spoke"), "spoke binary (-rollout)")
	return fs.String("spoke-args", "", "extra spoke flags, space separated (-rollout)")
}

// rolloutAuditPolicy records every write by bin/hub and by bin/spoke, and nothing else, at level:
// on the hub only the hub writes as hubUser, on a member both agents do.
func rolloutAuditPolicy(level string) string {
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: %s
  users: [%q, %q]
  verbs: ["create", "update", "patch", "delete", "deletecollection"]
- level: None
`, level, hubUser, spokeUser)
}

// rolloutControlPlaneOptions are the control planes of the rollout benchmark: the hub, and
// members as the local fleet starts them (scheduler, controller manager for the EndpointSlices
// that count serve endpoints, kwok Nodes), every one auditing the agents' writes.
func rolloutControlPlaneOptions(cfg config) ([]localcluster.Options, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	spokeCRDs, err := localcluster.SpokeCRDDir("")
	if err != nil {
		return nil, err
	}
	gatewayCRDs, err := localcluster.GatewayAPICRDDir()
	if err != nil {
		return nil, err
	}
	policy := rolloutAuditPolicy(cfg.auditLevel)
	all := []localcluster.Options{{
		Name: "hub", CRDDirs: []string{filepath.Join(root, hubCRDDir)}, AuditPolicy: policy, KeepState: cfg.keep,
	}}
	for i := range cfg.members {
		all = append(all, localcluster.Options{
			Name:              memberName(i),
			Scheduler:         true,
			ControllerManager: true,
			Nodes:             localcluster.FakeNodes(max(1, cfg.rollout.nodes), localcluster.NodeSpec{CPU: "16", Memory: "64Gi"}),
			CRDDirs:           []string{spokeCRDs, gatewayCRDs},
			AuditPolicy:       policy,
			KeepState:         cfg.keep,
		})
	}
	return all, nil
}

// startSpokes starts, on every member, a Ray dashboard stand-in and bin/spoke against it as
// spokeUser, with the local fleet's report interval. Each is recorded at once so that stop
// finds it on a later error.
func (b *bench) startSpokes(ctx context.Context, cfg config) error {
	b.spokes = map[string]*localcluster.Manager{}
	for _, name := range b.names {
		member := b.members[name]
		dash := raydashboard.New(raydashboard.Options{DeployDelay: cfg.rollout.deployDelay})
		dashURL, err := dash.Start("127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("starting the Ray dashboard stand-in of %s: %w", name, err)
		}
		b.dashboards = append(b.dashboards, dash)
		kubeconfig, _, err := member.UserKubeconfig(spokeUser)
		if err != nil {
			return err
		}
		args := append([]string{
			"--dashboard-address-template=" + raydashboard.DashboardTemplate(dashURL),
			"--serve-proxy-address-template=" + raydashboard.ProxyTemplate(dashURL),
			"--report-interval=" + localfleet.DefaultReportInterval.String(),
		}, cfg.rollout.spokeArgs...)
		spoke, err := member.StartManager(ctx, "spoke", cfg.rollout.spokeBin, kubeconfig, args, nil)
		if err != nil {
			return fmt.Errorf("starting bin/spoke on %s: %w", name, err)
		}
		b.spokes[name] = spoke
	}
	return nil
}

// exited names bin/hub or a spoke that has exited, or returns nil.
func (b *bench) exited() error {
	if done, _ := b.hubProc.Exited(); done {
		return fmt.Errorf("bin/hub exited (log %s)", b.hubProc.LogPath)
	}
	for _, name := range b.names {
		if s := b.spokes[name]; s != nil {
			if done, _ := s.Exited(); done {
				return fmt.Errorf("bin/spoke on %s exited (log %s)", name, s.LogPath)
			}
		}
	}
	return nil
}
