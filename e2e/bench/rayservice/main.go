// Command rayservice benchmarks the spoke's RayService reconciler on a real member control plane
// (etcd, kube-apiserver, kube-scheduler, kube-controller-manager for the EndpointSlices, kwok)
// with the Ray dashboard stand-in in this process: it creates many RayServices at once and
// reports how fast they all become Ready, then watches a steady state in which nothing
// changes and reports what the spoke still does there: dashboard calls per RayService per
// minute by kind (no config is submitted again), API writes per reconcile (counted exactly
// from the API server's audit log, by the spoke's own client certificate; the target is 0),
// and the spoke's memory and CPU.
// It imports only benchutil, spokebench and shared/ (the local fleet and test helpers), never hub/, spoke/
// or cmd/: it measures bin/spoke as a process.
//
//	go run ./e2e/bench/rayservice -services 100 -workers 1 -nodes 4 -steady 60s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/internal/spokebench"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// maxSteadyCallsPerMinute is the spoke's budget of dashboard and proxy calls for one settled
// RayService: a read of its applications every 10 s, no proxy health check.
const maxSteadyCallsPerMinute = 6

// config is the command line.
type config struct {
	spokebench.Flags
	steady, deployDelay time.Duration
}

func main() {
	cfg := parseFlags()
	benchutil.Main(func(ctx context.Context) error { return run(ctx, cfg) })
}

func parseFlags() config {
	var c config
	c.Register(flag.CommandLine, spokebench.Usage{
		CountName: "services", CountDefault: 100, Count: "RayServices to create at once",
		WorkersDefault: 1, Workers: "workers in each RayService's one worker group",
		Parallel: "concurrent creates (default: all RayServices at once)",
		Timeout:  "give up when not all RayServices are Ready by then",
		Settle:   "after all are Ready, wait until the spoke has not written for this long",
	})
	flag.DurationVar(&c.steady, "steady", time.Minute, "how long the steady state is watched")
	flag.DurationVar(&c.deployDelay, "deploy-delay", time.Second, "how long the dashboard stand-in takes to bring a Serve config to RUNNING")
	flag.Parse()
	c.Complete()
	return c
}

func run(ctx context.Context, cfg config) error {
	crdDir, err := localcluster.SpokeCRDDir("")
	if err != nil {
		return err
	}
	// The kube-controller-manager runs the EndpointSlice controller: a RayService is Ready once
	// its serve Service has ready endpoints.
	cluster, err := spokebench.Start(ctx, cfg.Flags, []string{crdDir}, true)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	dash := raydashboard.New(raydashboard.Options{DeployDelay: cfg.deployDelay})
	dashURL, err := dash.Start("127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("starting the Ray dashboard stand-in: %w", err)
	}
	defer func() { _ = dash.Close() }()
	kubeconfig, _, err := cluster.UserKubeconfig(spokebench.SpokeUser)
	if err != nil {
		return err
	}
	args := append([]string{
		"--dashboard-address-template=" + raydashboard.DashboardTemplate(dashURL),
		"--serve-proxy-address-template=" + raydashboard.ProxyTemplate(dashURL),
	}, strings.Fields(cfg.SpokeArgs)...)
	spoke, err := cluster.StartManager(ctx, "spoke", cfg.SpokeBin, kubeconfig, args, nil)
	if err != nil {
		return err
	}
	if err = cluster.CreateNamespace(ctx, spokebench.Namespace); err != nil {
		return err
	}
	res, err := measure(ctx, cfg, cluster, spoke, dash)
	if err != nil {
		cluster.DumpLogs(os.Stderr, 60)
		return err
	}
	printReport(os.Stdout, cfg, res)
	if res.steady.dashboard[raydashboard.OpUpdateDeployments] > 0 {
		fmt.Fprintln(os.Stderr, "bench: WARNING: the spoke submitted Serve configs again in the steady state")
	}
	// A window of a minute can hold both ends of six 10 s intervals: seven calls, one too many
	// for the window but not for the pace.
	if calls := benchutil.Sum(intsToFloats(res.steady.busiestCalls)); calls > maxSteadyCallsPerMinute*res.steady.window.Minutes()+1 {
		fmt.Fprintf(os.Stderr, "bench: WARNING: RayService %s had %.0f dashboard calls in the %v steady state, over %d a minute\n",
			res.steady.busiest, calls, res.steady.window.Round(time.Second), maxSteadyCallsPerMinute)
	}
	if res.steady.writes.Total > 0 {
		fmt.Fprintln(os.Stderr, "bench: WARNING: the spoke wrote to the API server in the steady state "+
			"(rerun with -keep -audit-level Request to see what)")
	}
	return nil
}

// result is everything the report shows.
type result struct {
	total     time.Duration
	latencies []time.Duration
	// writes are the spoke's writes of the whole run, split at the moment all were Ready.
	writes    benchutil.WriteCounts
	usage     localcluster.Usage
	reconcile map[string]map[string]float64 // controller -> result -> total, whole run
	// dashboardToReady counts the dashboard calls by operation up to the moment all were Ready.
	dashboardToReady map[string]int
	steady           steadyState
	controlPlane     []spokebench.ComponentCPU
}

func measure(ctx context.Context, cfg config, cluster *localcluster.Cluster, spoke *localcluster.Manager,
	dash *raydashboard.Server,
) (result, error) {
	var res result
	tracker := benchutil.NewReadiness(cfg.Count)
	if err := watchReady(ctx, cluster.Config, spokebench.Namespace, tracker); err != nil {
		return res, err
	}
	start := time.Now()
	if err := spokebench.CreateAll(ctx, cfg.Flags, cluster.Client, tracker, "RayService", func(i int) client.Object {
		return newRayService(fmt.Sprintf("rs-%04d", i), cfg.Workers)
	}); err != nil {
		return res, err
	}
	if err := spokebench.WaitAllReady(ctx, cfg.Flags, tracker, spoke, start, spokebench.Wait{
		Exited: "the spoke exited before all RayServices were Ready", Ready: "RayServices Ready",
	}); err != nil {
		return res, err
	}
	var readyAt time.Time
	res.latencies, readyAt = tracker.Latencies()
	res.total = readyAt.Sub(start)
	res.dashboardToReady = dashboardTotals(dash)
	if err := benchutil.WaitQuiet(ctx, cluster.AuditLogPath(), cfg.Settle); err != nil {
		return res, err
	}
	var err error
	if res.steady, err = watchSteadyState(ctx, cfg.steady, cluster, spoke, dash); err != nil {
		return res, err
	}
	if res.usage, err = spoke.Usage(); err != nil {
		return res, err
	}
	res.controlPlane = spokebench.ControlPlaneCPU(cluster)
	res.reconcile = map[string]map[string]float64{}
	for _, c := range []string{"rayservice", "raycluster"} {
		if res.reconcile[c], err = benchutil.ReconcileTotals(ctx, spoke.MetricsURL, c); err != nil {
			fmt.Fprintln(os.Stderr, "bench: reading the spoke's metrics:", err)
		}
	}
	res.writes, err = benchutil.CountWrites(cluster.AuditLogPath(), spokebench.SpokeUser, benchutil.Window{}, readyAt)
	return res, err
}

// newRayService is a RayService with one worker group of workers Pods and the one-application
// Serve config.
func newRayService(name string, workers int) *rayv1.RayService {
	n := int32(workers)
	return raybuilder.MakeRayService(name, spokebench.Namespace).Replicas(0, n).ReplicaBounds(0, n, n).Obj()
}

// intsToFloats converts counts for benchutil.Sum.
func intsToFloats(m map[string]int) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}
