// Command raycluster benchmarks the spoke's RayCluster reconciler on a real member control plane
// (etcd, kube-apiserver, kube-scheduler and kwok on loopback): it creates many RayClusters at
// once and reports how fast they all become ready, how many API writes the spoke made per
// cluster (counted exactly from the API server's audit log, by the spoke's own client
// certificate), and the spoke's peak memory and CPU time.
// It imports only benchutil, spokebench and shared/ (the local fleet and test helpers), never hub/, spoke/
// or cmd/: it measures bin/spoke as a process.
//
//	go run ./e2e/bench/raycluster -clusters 200 -workers 3 -nodes 4 -spoke-args "--max-concurrent-reconciles=8"
//
// KubeRay's own operator, built by the user, is measured the same way for comparison:
//
//	go run ./e2e/bench/raycluster -operator kuberay -operator-bin /tmp/kuberay-operator \
//	    -operator-args "--reconcile-concurrency=10"
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/internal/spokebench"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// config is the command line.
type config struct {
	spokebench.Flags
	operator, operatorBin, operatorArgs string
}

func main() {
	cfg := parseFlags()
	benchutil.Main(func(ctx context.Context) error { return run(ctx, cfg) })
}

func parseFlags() config {
	var c config
	c.Register(flag.CommandLine, spokebench.Usage{
		CountName: "clusters", CountDefault: 200, Count: "RayClusters to create at once",
		WorkersDefault: 3, Workers: "workers in each cluster's one worker group",
		Parallel: "concurrent creates (default: all clusters at once)",
		Timeout:  "give up when not all clusters are ready by then",
		Settle:   "after all are ready, count writes until the spoke is quiet this long",
	})
	flag.StringVar(&c.operator, "operator", operatorSpoke, "operator to measure: spoke, or kuberay (KubeRay's operator, for comparison)")
	flag.StringVar(&c.operatorBin, "operator-bin", "", "the operator's binary (default for the spoke: -spoke; required for kuberay)")
	flag.StringVar(&c.operatorArgs, "operator-args", "", "extra operator flags, space separated (default for the spoke: -spoke-args)")
	flag.Parse()
	c.Complete()
	return c
}

func run(ctx context.Context, cfg config) error {
	op, err := newOperator(cfg)
	if err != nil {
		return err
	}
	crdDir, err := localcluster.SpokeCRDDir("")
	if err != nil {
		return err
	}
	extraCRDs, err := op.crdDirs(ctx)
	if err != nil {
		return err
	}
	cluster, err := spokebench.Start(ctx, cfg.Flags, append([]string{crdDir}, extraCRDs...), false)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	kubeconfig, _, err := cluster.UserKubeconfig(spokebench.SpokeUser)
	if err != nil {
		return err
	}
	spoke, err := op.start(ctx, cluster, kubeconfig)
	if err != nil {
		return err
	}
	if err = cluster.CreateNamespace(ctx, spokebench.Namespace); err != nil {
		return err
	}
	res, err := measure(ctx, cfg, cluster, spoke)
	if err != nil {
		cluster.DumpLogs(os.Stderr, 60)
		return err
	}
	printReport(os.Stdout, cfg, op, res)
	if n := res.writes.ByKey[benchutil.WriteKey{Resource: "pods", Verb: "delete"}]; n > 0 {
		// Nothing in this benchmark asks for a Pod to go: a deletion means the operator created
		// that many Pods too many and then scaled the group back down.
		fmt.Fprintf(os.Stderr, "bench: WARNING: the operator deleted %d Pods nobody asked it to delete "+
			"(rerun with -keep -audit-level Request to see which clusters)\n", n)
	}
	return nil
}

// result is everything the report shows.
type result struct {
	total     time.Duration
	latencies []time.Duration
	stages    [numStages][]time.Duration
	// headLags are the waits from a head Pod turning Ready to its cluster's HeadPodReady.
	headLags  []time.Duration
	writes    benchutil.WriteCounts
	usage     localcluster.Usage
	reconcile map[string]float64
	// controlPlane is the CPU time of each control-plane component, for context.
	controlPlane []spokebench.ComponentCPU
	// requests are the API server's busiest verb/resource pairs, of requestsTotal.
	requests      []benchutil.RequestCount
	requestsTotal float64
}

func measure(ctx context.Context, cfg config, cluster *localcluster.Cluster, spoke *localcluster.Manager) (result, error) {
	var res result
	tracker := newReadyTracker(cfg.Count)
	if err := tracker.watch(ctx, cluster.Config, spokebench.Namespace); err != nil {
		return res, err
	}
	start := time.Now()
	if err := spokebench.CreateAll(ctx, cfg.Flags, cluster.Client, tracker.Readiness, "RayCluster", func(i int) client.Object {
		return raybuilder.MakeRayCluster(fmt.Sprintf("rc-%04d", i), spokebench.Namespace).
			WorkerGroup("workers", int32(cfg.Workers), 0, int32(cfg.Workers)).Obj()
	}); err != nil {
		return res, err
	}
	if err := spokebench.WaitAllReady(ctx, cfg.Flags, tracker.Readiness, spoke, start, spokebench.Wait{
		Exited: "the operator exited before all clusters were ready", Ready: "RayClusters ready",
	}); err != nil {
		return res, err
	}
	var readyAt time.Time
	res.latencies, readyAt = tracker.Latencies()
	res.stages = tracker.stages()
	res.headLags = tracker.pods.headLags()
	res.total = readyAt.Sub(start)
	if err := benchutil.WaitQuiet(ctx, cluster.AuditLogPath(), cfg.Settle); err != nil {
		return res, err
	}
	var err error
	if res.usage, err = spoke.Usage(); err != nil {
		return res, err
	}
	res.controlPlane = spokebench.ControlPlaneCPU(cluster)
	if res.requests, res.requestsTotal, err = benchutil.APIServerRequests(ctx, cluster.Config, 8); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	if res.reconcile, err = benchutil.ReconcileTotals(ctx, spoke.MetricsURL, "raycluster"); err != nil {
		fmt.Fprintln(os.Stderr, "bench: reading the operator's metrics:", err)
	}
	res.writes, err = benchutil.CountWrites(cluster.AuditLogPath(), spokebench.SpokeUser, benchutil.Window{}, readyAt)
	return res, err
}
