package main

import (
	"context"
	"fmt"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/internal/spokebench"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// dashboardOps are the stand-in's operations, in report order.
var dashboardOps = []string{
	raydashboard.OpServeDetails, raydashboard.OpProxyHealth,
	raydashboard.OpUpdateDeployments, raydashboard.OpDeleteApplications,
}

// steadyState is what the spoke did during a window in which nothing changed.
type steadyState struct {
	window time.Duration
	// dashboard counts the dashboard calls by operation.
	dashboard map[string]int
	// busiest is the RayCluster whose dashboard and proxy were called the most, and busiestCalls
	// those calls by operation: the average hides a RayService polled more than the others.
	busiest      string
	busiestCalls map[string]int
	// reconciles counts the RayService reconciles, by result.
	reconciles map[string]float64
	// writes are the spoke's API writes.
	writes benchutil.WriteCounts
	// cpu is the spoke's CPU time.
	cpu time.Duration
}

// watchSteadyState measures the spoke over the next d: dashboard calls from the stand-in's
// counters, reconciles from the spoke's metrics, writes from the audit log, CPU from /proc.
func watchSteadyState(ctx context.Context, d time.Duration, cluster *localcluster.Cluster,
	spoke *localcluster.Manager, dash *raydashboard.Server,
) (steadyState, error) {
	type snapshot struct {
		at         time.Time
		dashboard  map[string]int
		byCluster  map[string]map[string]int
		reconciles map[string]float64
		cpu        time.Duration
	}
	var clusters rayv1.RayClusterList
	if err := cluster.Client.List(ctx, &clusters, client.InNamespace(spokebench.Namespace)); err != nil {
		return steadyState{}, fmt.Errorf("listing the RayClusters: %w", err)
	}
	take := func() (snapshot, error) {
		s := snapshot{at: time.Now(), dashboard: dashboardTotals(dash), byCluster: map[string]map[string]int{}}
		for _, rc := range clusters.Items {
			s.byCluster[rc.Name] = clusterRequests(dash.Cluster(rc.Namespace, rc.Name))
		}
		var err error
		if s.reconciles, err = benchutil.ReconcileTotals(ctx, spoke.MetricsURL, "rayservice"); err != nil {
			return s, err
		}
		u, err := spoke.Usage()
		s.cpu = u.CPU
		return s, err
	}
	before, err := take()
	if err != nil {
		return steadyState{}, err
	}
	select {
	case <-time.After(d):
	case <-spoke.Done():
		return steadyState{}, fmt.Errorf("the spoke exited during the steady state")
	case <-ctx.Done():
		return steadyState{}, ctx.Err()
	}
	after, err := take()
	if err != nil {
		return steadyState{}, err
	}
	st := steadyState{
		window:     after.at.Sub(before.at),
		dashboard:  map[string]int{},
		reconciles: map[string]float64{},
		cpu:        after.cpu - before.cpu,
	}
	for op, n := range after.dashboard {
		st.dashboard[op] = n - before.dashboard[op]
	}
	most := -1
	for name, calls := range after.byCluster {
		diff, total := map[string]int{}, 0
		for op, n := range calls {
			diff[op] = n - before.byCluster[name][op]
			total += diff[op]
		}
		if total > most || (total == most && name < st.busiest) {
			most, st.busiest, st.busiestCalls = total, name, diff
		}
	}
	for r, n := range after.reconciles {
		st.reconciles[r] = n - before.reconciles[r]
	}
	st.writes, err = benchutil.CountWrites(cluster.AuditLogPath(), spokebench.SpokeUser,
		benchutil.Window{From: before.at, To: after.at}, after.at)
	return st, err
}

// dashboardTotals reads the stand-in's request counters of every operation.
func dashboardTotals(dash *raydashboard.Server) map[string]int {
	out := make(map[string]int, len(dashboardOps))
	for _, op := range dashboardOps {
		out[op] = dash.TotalRequests(op)
	}
	return out
}

// clusterRequests reads one Ray cluster's request counters of every operation.
func clusterRequests(c *raydashboard.Cluster) map[string]int {
	out := make(map[string]int, len(dashboardOps))
	for _, op := range dashboardOps {
		out[op] = c.Requests(op)
	}
	return out
}
