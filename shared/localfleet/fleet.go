// Package localfleet starts a RayFleet fleet on this machine for `rayfleet dev` and the e2e
// tests: a hub control plane running bin/hub, and member control planes each running bin/spoke
// against a Ray dashboard stand-in of its own, joined to the hub with the real `rayfleet join`.
// Every control plane is a localcluster.Cluster; everything listens on 127.0.0.1 only and keeps
// its state and logs under one directory (<StateDir>/hub, <StateDir>/<member>). With
// Options.Traffic the hub also gets Gateway API and Traefik serving a Gateway, and each member a
// load balancer stand-in (package loadbalancer) listening on the member's serve IP. A member
// marked Partitionable is reached by the hub through a proxy (package partition) that
// Fleet.Partition cuts: a partition in the network, the member running on.
// cmd/rayfleet and e2e/ import it, hub/ and spoke/ production code never: it runs their
// binaries as processes and imports no hub/, spoke/ or cmd/ package, nor shared/testing.
package localfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/loadbalancer"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/partition"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// DefaultReportInterval is how often the spokes write their ClusterReport: short, so that a
// test sees a member turn ready (and a heartbeat move) within seconds.
const DefaultReportInterval = 2 * time.Second

// DefaultDashboardDeployDelay is how long a stand-in takes to bring a submitted Serve config
// to RUNNING: long enough for the spoke to see the intermediate states, short enough for tests.
const DefaultDashboardDeployDelay = time.Second

// Identities the agents authenticate as (in system:masters), so that their requests can be
// told apart from the test's own in audit logs.
const (
	// HubUser is the user bin/hub runs as on the hub.
	HubUser = "rayfleet-hub"
	// SpokeUser is the user bin/spoke runs as on its member.
	SpokeUser = "rayfleet-spoke"
)

// hubClusterName is the hub's name in its kubeconfig and its state directory; members may not
// use it.
const hubClusterName = "hub"

// Options say what fleet to start.
type Options struct {
	// BinDir holds the Kubernetes binaries (etcd, kube-apiserver, …, kwok); default
	// localcluster.DefaultBinDir().
	BinDir string
	// RayFleetBin holds bin/hub, bin/spoke and bin/rayfleet; default DefaultRayFleetBin().
	RayFleetBin string
	// Members are the member clusters; their names must be unique DNS labels.
	Members []MemberSpec
	// StateDir holds every cluster's state and logs; default a fresh temporary directory.
	StateDir string
	// KeepState leaves StateDir on disk after Stop (for post-mortems).
	KeepState bool
	// HubNamespace is where the hub keeps the members' kubeconfig Secrets; default
	// labels.DefaultHubNamespace.
	HubNamespace string
	// ReportInterval is the spokes' --report-interval; default DefaultReportInterval.
	ReportInterval time.Duration
	// HeartbeatTimeout is the hub's --heartbeat-timeout; zero keeps the hub's default.
	HeartbeatTimeout time.Duration
	// HubReplicas is how many bin/hub processes run; default 1. With more than one, every
	// replica runs with --leader-elect and its Lease in HubNamespace, as the hub chart runs
	// them: one leader reconciles, the others stand by (see Fleet.HubLeader). A single replica
	// runs without leader election, so that a restarted hub does not wait out a Lease.
	HubReplicas int
	// DashboardDeployDelay is the stand-ins' deploy delay; default DefaultDashboardDeployDelay.
	DashboardDeployDelay time.Duration
	// HubArgs and SpokeArgs are extra flags for bin/hub and every bin/spoke.
	HubArgs, SpokeArgs []string
	// LogLevel, when set, is the --zap-log-level of bin/hub and every bin/spoke ("debug",
	// "info", "error", or a verbosity such as "10"); default the development logger's (debug).
	LogLevel string
	// CLI is the rayfleet binary `join` is run with; default <RayFleetBin>/rayfleet.
	CLI string
	// HubAPIServerPort is the hub's kube-apiserver port; 0 picks a free one (see
	// localcluster.Options.APIServerPort).
	HubAPIServerPort int
	// HubCRDDirs and MemberCRDDirs, when set, are the CRD directories installed on the hub and
	// on every member instead of the ones found in the repository (charts/*/crds, the Gateway
	// API CRDs).
	HubCRDDirs, MemberCRDDirs []string
	// LogDir, when set, receives every log in one folder: <LogDir>/<cluster>-<component>.log
	// (hub-kube-apiserver.log, us-spoke.log, …) and <LogDir>/join-<member>.log; default each
	// cluster's state directory and Dir.
	LogDir string
	// MemberAuditPolicy, when set, is every member API server's audit policy (an
	// audit.k8s.io/v1 Policy in YAML); each member writes its audit log to its
	// Cluster.AuditLogPath, e.g. for a test to count the hub's writes there.
	MemberAuditPolicy string
	// OnStart, when set, is called with every process the fleet starts (control planes, bin/hub,
	// the spokes, Traefik) and the name of its cluster, right after it started, e.g. to record
	// its pid. It may be called from several goroutines at once.
	OnStart func(cluster string, p *localcluster.Process)
	// Traffic, when set, gives the fleet a traffic path: Gateway API's CRDs, a Gateway and
	// Traefik serving it on the hub (HubCRDDirs, when given, must hold the Gateway API CRDs),
	// and a load balancer stand-in per member.
	Traffic *TrafficOptions
	// RealNodes, when set, gives every cluster one real Node (see RealNodes); root only.
	RealNodes *RealNodes
	// NoGrant starts the fleet without its NamespaceGrant (Grant), as a fleet upgraded from a
	// release before grants has none: the hub then places nothing new until Fleet.Grant makes it.
	NoGrant bool
}

// MemberSpec describes one member cluster.
type MemberSpec struct {
	// Name names the member's control plane, its MemberCluster and its kubeconfig Secret.
	Name string
	// Labels are set on the member's MemberCluster after joining (placement selects on them).
	Labels map[string]string
	// Nodes are the member's fake Nodes (kwok); see localcluster.FakeNodes.
	Nodes []localcluster.NodeSpec
	// APIServerPort is the member's kube-apiserver port; 0 picks a free one.
	APIServerPort int
	// Partitionable puts a TCP proxy (package partition) between the hub and the member's API
	// server: the hub reaches the member through it, while the member's spoke and the test's
	// clients reach the API server directly, so that Fleet.Partition can cut the hub off the
	// member in the network, the member itself running on. Off, the hub connects directly.
	Partitionable bool
}

// Fleet is a running fleet.
type Fleet struct {
	// Dir holds every cluster's state directory and the join logs.
	Dir string
	// HubNamespace is the hub's namespace (kubeconfig Secrets).
	HubNamespace string
	// Hub is the hub's control plane (etcd and kube-apiserver only).
	Hub *localcluster.Cluster
	// HubProcess is bin/hub: the first of HubProcesses, which KillHub and RestartHub act on.
	HubProcess *localcluster.Manager
	// HubProcesses are the bin/hub replicas (Options.HubReplicas), HubProcess first; an entry is
	// replaced when its replica is started again.
	HubProcesses []*localcluster.Manager
	// Members are the members' control planes by name.
	Members map[string]*localcluster.Cluster
	// Spokes are the members' bin/spoke processes by member name.
	Spokes map[string]*localcluster.Manager
	// Dashboards are the Ray dashboard stand-ins by member name. Each member has its own: two
	// members may host RayClusters of the same namespace and name (one hub RayService placed on
	// both), and the stand-in keys clusters by namespace and name only.
	Dashboards map[string]*raydashboard.Server
	// GatewayURL is where the hub's Gateway serves (http://127.0.0.1:<port>), with
	// Options.Traffic; "" otherwise.
	GatewayURL string
	// GatewayAdminURL is Traefik's API (http://127.0.0.1:<port>), with Options.Traffic: what
	// it reads there is the configuration Traefik routes by, which the route's status only
	// promises (Traefik applies it up to its providers' throttle later).
	GatewayAdminURL string
	// Traefik is the Gateway's data plane on the hub, with Options.Traffic.
	Traefik *localcluster.Process
	// LoadBalancers are the load balancer stand-ins by member name, with Options.Traffic.
	LoadBalancers map[string]*loadbalancer.Controller
	// HubProxies are the proxies the hub reaches Partitionable members through, by member name.
	HubProxies map[string]*partition.Proxy

	opts Options
	// closers are the stand-ins' log files, closed last by Stop.
	closers  []io.Closer
	mu       sync.Mutex
	stopOnce sync.Once
	// cutOff are the members whose API server StopMemberAPIServer stopped: their spokes may
	// exit on their own from then on, which Exited does not count as a failure.
	cutOff map[string]bool
	// hubKilled are the hub replicas KillHub or KillHubReplica killed, until started again:
	// their exit is the caller's doing.
	hubKilled map[int]bool
	// nodeNS are the real Nodes' network namespaces by cluster name (Options.RealNodes).
	nodeNS map[string]*localcluster.NetNS
	// trafficNS is where Traefik and the load balancers run with TrafficOptions.Isolated.
	trafficNS *localcluster.NetNS
	// spokeArgs are how each member's spoke was started, for StartMemberAPIServer to start
	// it again.
	spokeArgs map[string]managerArgs
}

// managerArgs are the kubeconfig and flags a manager binary was started with.
type managerArgs struct {
	kubeconfig string
	args       []string
	// env is added to the process's environment (SkewSpokeClock's offset).
	env []string
}

// DefaultRayFleetBin is $RAYFLEET_BIN, or bin in the repository.
func DefaultRayFleetBin() string {
	if d := os.Getenv("RAYFLEET_BIN"); d != "" {
		return d
	}
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "bin"
	}
	return filepath.Join(root, "bin")
}

// Start brings up the hub and the members' control planes concurrently, grants every hub
// namespace the whole fleet (Grant; not with Options.NoGrant), then bin/hub, then for each
// member its dashboard stand-in and bin/spoke, joins it with `rayfleet join` and labels its
// MemberCluster. It returns once every member is joined; that the hub has found them Ready is
// for the caller to wait for. On error everything started so far is stopped.
func Start(ctx context.Context, opts Options) (f *Fleet, err error) {
	if opts, err = withDefaults(opts); err != nil {
		return nil, err
	}
	f = &Fleet{
		HubNamespace:  opts.HubNamespace,
		Members:       map[string]*localcluster.Cluster{},
		Spokes:        map[string]*localcluster.Manager{},
		Dashboards:    map[string]*raydashboard.Server{},
		LoadBalancers: map[string]*loadbalancer.Controller{},
		HubProxies:    map[string]*partition.Proxy{},
		opts:          opts,
		spokeArgs:     map[string]managerArgs{},
		nodeNS:        map[string]*localcluster.NetNS{},
	}
	if f.Dir, err = localcluster.StateDir(opts.StateDir, "rayfleet-fleet-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Stop()
		}
	}()
	if err = f.startControlPlanes(ctx); err != nil {
		return f, err
	}
	if !opts.NoGrant {
		if err = f.Grant(ctx); err != nil {
			return f, err
		}
	}
	if err = f.startHub(ctx); err != nil {
		return f, err
	}
	if opts.Traffic != nil {
		if err = f.startTraffic(ctx); err != nil {
			return f, err
		}
	}
	if err = f.startMembers(ctx); err != nil {
		return f, err
	}
	return f, nil
}

// withDefaults fills in defaults and rejects options that cannot work.
func withDefaults(o Options) (Options, error) {
	if o.BinDir == "" {
		o.BinDir = localcluster.DefaultBinDir()
	}
	if o.RayFleetBin == "" {
		o.RayFleetBin = DefaultRayFleetBin()
	}
	if o.CLI == "" {
		o.CLI = filepath.Join(o.RayFleetBin, "rayfleet")
	}
	if o.HubNamespace == "" {
		o.HubNamespace = labels.DefaultHubNamespace
	}
	if o.ReportInterval == 0 {
		o.ReportInterval = DefaultReportInterval
	}
	if o.DashboardDeployDelay == 0 {
		o.DashboardDeployDelay = DefaultDashboardDeployDelay
	}
	switch {
	case o.HubReplicas == 0:
		o.HubReplicas = 1
	case o.HubReplicas < 0:
		return o, fmt.Errorf("hub replicas %d: want 1 or more", o.HubReplicas)
	}
	seen := map[string]bool{}
	for _, m := range o.Members {
		if errs := validation.IsDNS1123Label(m.Name); len(errs) > 0 {
			return o, fmt.Errorf("member name %q: %v", m.Name, errs)
		}
		if m.Name == hubClusterName {
			return o, fmt.Errorf("member name %q is the hub's", m.Name)
		}
		if seen[m.Name] {
			return o, fmt.Errorf("member name %q given twice", m.Name)
		}
		seen[m.Name] = true
	}
	if o.Traffic != nil {
		if err := o.Traffic.validate(o.Members); err != nil {
			return o, err
		}
	}
	return o, nil
}

// Stop stops bin/hub, the spokes and the load balancer stand-ins first (so that nothing logs
// errors about control planes going away), then the hub's proxies, every control plane
// (Traefik with the hub's), then the dashboard stand-ins, and removes Dir unless KeepState is
// set. It is safe to call more than once.
func (f *Fleet) Stop() {
	f.stopOnce.Do(func() {
		f.mu.Lock()
		procs := slices.Collect(maps.Values(f.Spokes))
		for _, hub := range f.HubProcesses {
			if hub != nil {
				procs = append(procs, hub)
			}
		}
		clusters := slices.Collect(maps.Values(f.Members))
		if f.Hub != nil {
			clusters = append(clusters, f.Hub)
		}
		dashboards := slices.Collect(maps.Values(f.Dashboards))
		lbs := slices.Collect(maps.Values(f.LoadBalancers))
		proxies := slices.Collect(maps.Values(f.HubProxies))
		closers := f.closers
		f.mu.Unlock()

		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(p.Stop)
		}
		for _, lb := range lbs {
			wg.Go(lb.Stop)
		}
		wg.Wait()
		for _, p := range proxies {
			_ = p.Close()
		}
		for _, c := range clusters {
			wg.Go(c.Stop)
		}
		wg.Wait()
		for _, d := range dashboards {
			_ = d.Close()
		}
		for _, c := range closers {
			_ = c.Close()
		}
		if !f.opts.KeepState && f.Dir != "" {
			_ = os.RemoveAll(f.Dir)
		}
	})
}

// DumpLogs writes the last lines of every component's log, hub first, to w.
func (f *Fleet) DumpLogs(w io.Writer, lines int) {
	f.mu.Lock()
	hub := f.Hub
	names := slices.Sorted(maps.Keys(f.Members))
	members := make([]*localcluster.Cluster, len(names))
	for i, n := range names {
		members[i] = f.Members[n]
	}
	f.mu.Unlock()
	for _, c := range append([]*localcluster.Cluster{hub}, members...) {
		if c == nil {
			continue
		}
		_, _ = fmt.Fprintf(w, "######## cluster %s ########\n", c.Name)
		c.DumpLogs(w, lines)
	}
}

// Exited returns an error naming bin/hub or any spoke that has exited; tests check it so that
// they fail fast instead of timing out.
func (f *Fleet) Exited() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	procs := maps.Clone(f.Spokes)
	for i, hub := range f.HubProcesses {
		if hub != nil && !f.hubKilled[i] {
			procs[hubReplicaName(i)] = hub
		}
	}
	for _, name := range slices.Sorted(maps.Keys(procs)) {
		if f.cutOff[name] {
			continue
		}
		p := procs[name]
		exited, err := p.Exited()
		switch {
		case exited && err != nil:
			errs = append(errs, fmt.Errorf("%s: %s exited (log %s): %w", name, p.Name, p.LogPath, err))
		case exited:
			errs = append(errs, fmt.Errorf("%s: %s exited (log %s)", name, p.Name, p.LogPath))
		}
	}
	return errors.Join(errs...)
}

// StopMemberAPIServer stops the member's kube-apiserver (etcd, the spoke and the stand-in keep
// running), so that the hub can no longer reach the member: an outage as the hub sees it,
// until StartMemberAPIServer. Meanwhile its spoke, which loses its API server too, may exit
// without Exited reporting it.
func (f *Fleet) StopMemberAPIServer(name string) error {
	f.mu.Lock()
	member := f.Members[name]
	if member != nil {
		if f.cutOff == nil {
			f.cutOff = map[string]bool{}
		}
		f.cutOff[name] = true
	}
	f.mu.Unlock()
	if member == nil {
		return fmt.Errorf("no member %q", name)
	}
	member.StopAPIServer()
	return nil
}

// StartMemberAPIServer ends the outage StopMemberAPIServer began: it starts the member's
// kube-apiserver again on the same port, etcd and certificates (the hub's kubeconfig of the
// member stays valid), waits until it serves, and starts the spoke again with its flags if it
// exited meanwhile. From then on Exited reports the spoke's exit again.
func (f *Fleet) StartMemberAPIServer(ctx context.Context, name string) error {
	f.mu.Lock()
	member, spoke, args := f.Members[name], f.Spokes[name], f.spokeArgs[name]
	f.mu.Unlock()
	if member == nil || spoke == nil {
		return fmt.Errorf("no member %q", name)
	}
	if err := member.StartAPIServer(ctx); err != nil {
		return fmt.Errorf("member %s: %w", name, err)
	}
	if exited, _ := spoke.Exited(); exited {
		restarted, err := member.StartManager(ctx, spoke.Name, spoke.Bin, args.kubeconfig, args.args, args.env)
		if err != nil {
			return fmt.Errorf("member %s: restarting bin/spoke: %w", name, err)
		}
		f.mu.Lock()
		f.Spokes[name] = restarted
		f.mu.Unlock()
	}
	f.mu.Lock()
	delete(f.cutOff, name)
	f.mu.Unlock()
	return nil
}

// KillHub kills bin/hub (HubProcess, the first replica) with SIGKILL, as a crash or an
// out-of-memory kill would, and waits for it to exit. Exited does not report that exit;
// RestartHub brings the hub back.
func (f *Fleet) KillHub() error {
	return f.KillHubReplica(0)
}

// RestartHub starts bin/hub (the first replica) again with the flags it started with,
// stopping the running one first if KillHub did not, and waits until it is ready. Its log is
// appended to the same file.
func (f *Fleet) RestartHub(ctx context.Context) error {
	return f.StartHubReplica(ctx, 0)
}

// KillHubReplica kills hub replica i (0 is HubProcess) with SIGKILL and waits for it to exit;
// a leader killed so does not release its Lease, and the others wait it out. Exited does not
// report that exit; StartHubReplica brings the replica back.
func (f *Fleet) KillHubReplica(i int) error {
	f.mu.Lock()
	var hub *localcluster.Manager
	if i >= 0 && i < len(f.HubProcesses) {
		hub = f.HubProcesses[i]
	}
	if hub != nil {
		if f.hubKilled == nil {
			f.hubKilled = map[int]bool{}
		}
		f.hubKilled[i] = true
	}
	f.mu.Unlock()
	if hub == nil {
		return fmt.Errorf("the fleet runs no bin/hub replica %d", i)
	}
	hub.Kill()
	return nil
}

// StartHubReplica starts hub replica i again with the flags it started with, stopping the
// running one first if it was not killed, and waits until it is ready (which, with leader
// election, is before it leads). Its log is appended to the same file.
func (f *Fleet) StartHubReplica(ctx context.Context, i int) error {
	f.mu.Lock()
	if i < 0 || i >= len(f.HubProcesses) {
		f.mu.Unlock()
		return fmt.Errorf("the fleet runs no bin/hub replica %d", i)
	}
	hub := f.HubProcesses[i]
	f.mu.Unlock()
	if hub != nil {
		hub.Stop()
	}
	if err := f.startHubReplica(ctx, i); err != nil {
		return fmt.Errorf("restarting bin/hub replica %d: %w", i, err)
	}
	f.mu.Lock()
	delete(f.hubKilled, i)
	f.mu.Unlock()
	return nil
}

// HubLeader returns the index in HubProcesses of the replica that holds the leader-election
// Lease, as its own metrics say (controller-runtime's leader_election_master_status is 1 on
// the leader only): the Lease's holderIdentity is the host name and a random UUID, which does
// not say which process it is. It returns -1 when no running replica leads (between a
// leader's death and its successor's election), and an error when a running replica's metrics
// cannot be read. With a single replica (no leader election) that replica is the leader.
func (f *Fleet) HubLeader(ctx context.Context) (int, error) {
	f.mu.Lock()
	hubs := slices.Clone(f.HubProcesses)
	killed := maps.Clone(f.hubKilled)
	f.mu.Unlock()
	if len(hubs) == 1 {
		if killed[0] {
			return -1, nil
		}
		return 0, nil
	}
	leader := -1
	for i, hub := range hubs {
		if hub == nil || killed[i] {
			continue
		}
		if exited, _ := hub.Exited(); exited {
			continue
		}
		leads, err := leads(ctx, hub.MetricsURL)
		if err != nil {
			return -1, fmt.Errorf("bin/hub replica %d: %w", i, err)
		}
		if leads {
			leader = i
		}
	}
	return leader, nil
}

// leads reads a manager's metrics and reports whether it leads a leader election.
func leads(ctx context.Context, metricsURL string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, fmt.Errorf("reading metrics %s: %w", metricsURL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("reading metrics %s: %s", metricsURL, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, fmt.Errorf("reading metrics %s: %w", metricsURL, err)
	}
	return leaderInMetrics(string(body)), nil
}

// leaderInMetrics reports whether Prometheus text exposition says its process leads:
// a leader_election_master_status sample of 1.
func leaderInMetrics(text string) bool {
	for line := range strings.SplitSeq(text, "\n") {
		if !strings.HasPrefix(line, leaderMetric+"{") && !strings.HasPrefix(line, leaderMetric+" ") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[len(fields)-1] == "1" {
			return true
		}
	}
	return false
}

// leaderMetric is controller-runtime's gauge of leadership: 1 on the leader, 0 on the others.
const leaderMetric = "leader_election_master_status"
