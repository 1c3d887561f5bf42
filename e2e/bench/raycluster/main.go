// Command raycluster benchmarks the spoke's RayCluster reconciler on a real member control plane
// (etcd, kube-apiserver, kube-scheduler and kwok on loopback): it creates many RayClusters at
// once and reports how fast they all become ready, how many API writes the spoke made per
// cluster (counted exactly from the API server's audit log, by the spoke's own client
// certificate), and the spoke's peak memory and CPU time.
// It imports only benchutil and shared/ (the local fleet and test helpers), never hub/, spoke/
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
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// spokeUser is the identity of the operator's client certificate (the spoke's, or KubeRay's
// when it is measured instead); the audit policy records its writes only.
const spokeUser = "rayfleet-spoke"

// benchNamespace holds the benchmark's RayClusters.
const benchNamespace = "bench"

// config is the command line.
type config struct {
	clusters, workers, nodes, parallel  int
	spokeBin, spokeArgs                 string
	operator, operatorBin, operatorArgs string
	timeout, settle                     time.Duration
	keep                                bool
	auditLevel                          string
}

func main() {
	cfg := parseFlags()
	benchutil.Main(func(ctx context.Context) error { return run(ctx, cfg) })
}

func parseFlags() config {
	var c config
	flag.IntVar(&c.clusters, "clusters", 200, "RayClusters to create at once")
	flag.IntVar(&c.workers, "workers", 3, "workers in each cluster's one worker group")
	flag.IntVar(&c.nodes, "nodes", 4, "fake kwok Nodes")
	flag.IntVar(&c.parallel, "parallel", 0, "concurrent creates (default: all clusters at once)")
	flag.StringVar(&c.spokeBin, "spoke", benchutil.DefaultSpokeBinary(), "spoke binary")
	flag.StringVar(&c.spokeArgs, "spoke-args", "", "extra spoke flags, space separated (e.g. --max-concurrent-reconciles=8)")
	flag.StringVar(&c.operator, "operator", operatorSpoke, "operator to measure: spoke, or kuberay (KubeRay's operator, for comparison)")
	flag.StringVar(&c.operatorBin, "operator-bin", "", "the operator's binary (default for the spoke: -spoke; required for kuberay)")
	flag.StringVar(&c.operatorArgs, "operator-args", "", "extra operator flags, space separated (default for the spoke: -spoke-args)")
	flag.DurationVar(&c.timeout, "timeout", 10*time.Minute, "give up when not all clusters are ready by then")
	flag.DurationVar(&c.settle, "settle", 3*time.Second, "after all are ready, count writes until the spoke is quiet this long")
	flag.BoolVar(&c.keep, "keep", false, "keep the control plane's state dir (logs, audit log)")
	flag.StringVar(&c.auditLevel, "audit-level", "Metadata", "audit level of the spoke's writes: Metadata, or Request to keep their bodies")
	flag.Parse()
	if c.parallel <= 0 {
		c.parallel = c.clusters
	}
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
	podsPerNode := (cfg.clusters*(cfg.workers+1))/cfg.nodes + 1
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Scheduler: true,
		Nodes: localcluster.FakeNodes(cfg.nodes, localcluster.NodeSpec{
			CPU: "100000", Memory: "100Ti", Pods: max(250, 2*podsPerNode),
		}),
		CRDDirs:     append([]string{crdDir}, extraCRDs...),
		AuditPolicy: benchutil.AuditPolicy(spokeUser, cfg.auditLevel),
		KeepState:   cfg.keep,
	})
	if err != nil {
		return fmt.Errorf("starting the member control plane: %w", err)
	}
	defer cluster.Stop()
	if cfg.keep {
		fmt.Fprintln(os.Stderr, "bench: state and logs in", cluster.Dir)
	}
	kubeconfig, _, err := cluster.UserKubeconfig(spokeUser)
	if err != nil {
		return err
	}
	spoke, err := op.start(ctx, cluster, kubeconfig)
	if err != nil {
		return err
	}
	if err = cluster.CreateNamespace(ctx, benchNamespace); err != nil {
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
	// controlPlane is the CPU time of each control-plane component, for context: on a small
	// machine they compete with the spoke for the same cores.
	controlPlane []componentCPU
	// requests are the API server's busiest verb/resource pairs, of requestsTotal.
	requests      []benchutil.RequestCount
	requestsTotal float64
}

type componentCPU struct {
	name string
	cpu  time.Duration
}

func measure(ctx context.Context, cfg config, cluster *localcluster.Cluster, spoke *localcluster.Manager) (result, error) {
	var res result
	tracker := newReadyTracker(cfg.clusters)
	if err := tracker.watch(ctx, cluster.Config, benchNamespace); err != nil {
		return res, err
	}
	start := time.Now()
	if err := createClusters(ctx, cfg, cluster.Client, tracker); err != nil {
		return res, err
	}
	select {
	case <-tracker.AllDone():
	case <-spoke.Done():
		return res, errors.New("the operator exited before all clusters were ready")
	case <-time.After(cfg.timeout - time.Since(start)):
		return res, fmt.Errorf("only %d of %d RayClusters ready after %v", tracker.ReadyCount(), cfg.clusters, cfg.timeout)
	case <-ctx.Done():
		return res, ctx.Err()
	}
	var readyAt time.Time
	res.latencies, readyAt = tracker.Latencies()
	res.stages = tracker.stages()
	res.headLags = tracker.pods.headLags()
	res.total = readyAt.Sub(start)
	if err := benchutil.WaitQuiet(ctx, cluster.AuditLogPath(), cfg.settle); err != nil {
		return res, err
	}
	var err error
	if res.usage, err = spoke.Usage(); err != nil {
		return res, err
	}
	for _, p := range cluster.Components() {
		if u, usageErr := p.Usage(); usageErr == nil {
			res.controlPlane = append(res.controlPlane, componentCPU{p.Name, u.CPU})
		}
	}
	if res.requests, res.requestsTotal, err = benchutil.APIServerRequests(ctx, cluster.Config, 8); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
	}
	if res.reconcile, err = benchutil.ReconcileTotals(ctx, spoke.MetricsURL, "raycluster"); err != nil {
		fmt.Fprintln(os.Stderr, "bench: reading the operator's metrics:", err)
	}
	res.writes, err = benchutil.CountWrites(cluster.AuditLogPath(), spokeUser, benchutil.Window{}, readyAt)
	return res, err
}

// createClusters creates the RayClusters with cfg.parallel concurrent creates, recording each
// one's creation time just before its request is sent.
func createClusters(ctx context.Context, cfg config, c client.Client, tracker *readyTracker) error {
	sem := make(chan struct{}, cfg.parallel)
	errs := make([]error, cfg.clusters)
	var wg sync.WaitGroup
	for i := range cfg.clusters {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			name := fmt.Sprintf("rc-%04d", i)
			rc := raybuilder.MakeRayCluster(name, benchNamespace).
				WorkerGroup("workers", int32(cfg.workers), 0, int32(cfg.workers)).Obj()
			tracker.MarkCreated(name, time.Now())
			if err := c.Create(ctx, rc); err != nil {
				errs[i] = fmt.Errorf("creating RayCluster %s: %w", name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
