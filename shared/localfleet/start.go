package localfleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// hubCRDDir holds the CRDs the hub chart installs (fleet.rayfleet.io and ray.io RayServices).
const hubCRDDir = "charts/rayfleet-hub/crds"

// clusterReportCRD is the CRD a member needs for its spoke to report; SpokeCRDDir falls back to
// ray.io CRDs only when the chart's CRDs are missing, and a fleet cannot work without it.
const clusterReportCRD = "clusterreports.fleet.rayfleet.io"

// crdDirs returns the hub's and the members' CRD directories.
func crdDirs(binDir string) (hub string, member []string, err error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", nil, err
	}
	hub = filepath.Join(root, hubCRDDir)
	spoke, err := localcluster.SpokeCRDDir(binDir)
	if err != nil {
		return "", nil, err
	}
	if !dirMentions(spoke, clusterReportCRD) {
		return "", nil, fmt.Errorf("no %s CRD in %s; run `make manifests`", clusterReportCRD, spoke)
	}
	gateway, err := localcluster.GatewayAPICRDDir()
	if err != nil {
		return "", nil, err
	}
	return hub, []string{spoke, gateway}, nil
}

// dirMentions reports whether a YAML file in dir contains s.
func dirMentions(dir, s string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil && bytes.Contains(data, []byte(s)) {
			return true
		}
	}
	return false
}

// startControlPlanes starts the hub's and every member's control plane at once: each takes
// seconds, mostly waiting, so on two cores starting them together is still much quicker.
func (f *Fleet) startControlPlanes(ctx context.Context) error {
	hubCRDs, memberCRDs := f.opts.HubCRDDirs, f.opts.MemberCRDDirs
	if len(hubCRDs) == 0 || len(memberCRDs) == 0 {
		hub, member, err := crdDirs(f.opts.BinDir)
		if err != nil {
			return err
		}
		hubCRDs, memberCRDs = []string{hub}, member
		if f.opts.Traffic != nil {
			// The hub writes HTTPRoutes there and Traefik serves its Gateway.
			gateway, err := localcluster.GatewayAPICRDDir()
			if err != nil {
				return err
			}
			hubCRDs = append(hubCRDs, gateway)
		}
	}
	all := []localcluster.Options{{
		Name: hubClusterName, BinDir: f.opts.BinDir, StateDir: filepath.Join(f.Dir, hubClusterName),
		KeepState: true, CRDDirs: hubCRDs, APIServerPort: f.opts.HubAPIServerPort,
		LogDir: f.opts.LogDir, OnStart: f.onStart(hubClusterName),
	}}
	for _, m := range f.opts.Members {
		all = append(all, localcluster.Options{
			Name: m.Name, BinDir: f.opts.BinDir, StateDir: filepath.Join(f.Dir, m.Name),
			// The fleet removes its whole directory itself; see Stop.
			KeepState: true,
			Scheduler: true,
			// As on a real member: garbage collection, namespace deletion, ServiceAccounts.
			ControllerManager: true,
			Nodes:             m.Nodes,
			CRDDirs:           memberCRDs,
			AuditPolicy:       f.opts.MemberAuditPolicy,
			APIServerPort:     m.APIServerPort,
			LogDir:            f.opts.LogDir,
			OnStart:           f.onStart(m.Name),
		})
	}
	for i := range all {
		node, err := f.realNode(i, all[i].Name)
		if err != nil {
			return err
		}
		if node != nil {
			// The Node's Pods need scheduling and their ServiceAccounts, the hub's too.
			all[i].RealNode, all[i].Scheduler, all[i].ControllerManager = node, true, true
		}
	}
	clusters := make([]*localcluster.Cluster, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, o := range all {
		wg.Go(func() {
			clusters[i], errs[i] = localcluster.Start(ctx, o)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("starting the control plane of %s: %w", o.Name, errs[i])
			}
		})
	}
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range clusters {
		if c == nil || errs[i] != nil {
			continue // Start stopped it already
		}
		if i == 0 {
			f.Hub = c
		} else {
			f.Members[c.Name] = c
		}
	}
	return errors.Join(errs...)
}

// onStart is the localcluster hook of one cluster: Options.OnStart with the cluster's name.
func (f *Fleet) onStart(cluster string) func(*localcluster.Process) {
	if f.opts.OnStart == nil {
		return nil
	}
	return func(p *localcluster.Process) { f.opts.OnStart(cluster, p) }
}

// HubLeaderElectionID is the name of the hub replicas' leader-election Lease (bin/hub's
// default --leader-election-id), in the hub namespace.
const HubLeaderElectionID = "rayfleet-hub.rayfleet.io"

// startHub runs Options.HubReplicas bin/hub processes against the hub, one after the other,
// and waits until each is ready.
func (f *Fleet) startHub(ctx context.Context) error {
	f.mu.Lock()
	f.HubProcesses = make([]*localcluster.Manager, f.opts.HubReplicas)
	f.mu.Unlock()
	for i := range f.opts.HubReplicas {
		if err := f.startHubReplica(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// startHubReplica runs hub replica i and waits until it is ready. Replicas after the first
// are named hub-2, hub-3, … (their logs too). With several replicas each elects a leader
// through the Lease in the hub namespace, as the hub chart runs them.
func (f *Fleet) startHubReplica(ctx context.Context, i int) error {
	kubeconfig, _, err := f.Hub.UserKubeconfig(HubUser)
	if err != nil {
		return err
	}
	args := append(f.logArgs(), "--hub-namespace="+f.HubNamespace)
	if f.opts.HeartbeatTimeout > 0 {
		args = append(args, "--heartbeat-timeout="+f.opts.HeartbeatTimeout.String())
	}
	if f.opts.HubReplicas > 1 {
		args = append(args, "--leader-elect", "--leader-election-namespace="+f.HubNamespace)
	}
	name := hubReplicaName(i)
	m, err := f.Hub.StartManager(ctx, name, filepath.Join(f.opts.RayFleetBin, "hub"), kubeconfig,
		append(args, f.opts.HubArgs...), nil)
	if err != nil {
		return fmt.Errorf("starting bin/hub (%s): %w", name, err)
	}
	f.mu.Lock()
	f.HubProcesses[i] = m
	if i == 0 {
		f.HubProcess = m
	}
	f.mu.Unlock()
	return nil
}

// hubReplicaName names hub replica i as a process: hub, then hub-2, hub-3, ….
func hubReplicaName(i int) string {
	if i == 0 {
		return "hub"
	}
	return fmt.Sprintf("hub-%d", i+1)
}

// startMembers brings up every member's agent and joins it, all members at once.
func (f *Fleet) startMembers(ctx context.Context) error {
	errs := make([]error, len(f.opts.Members))
	var wg sync.WaitGroup
	for i, spec := range f.opts.Members {
		wg.Go(func() {
			if err := f.startMember(ctx, spec); err != nil {
				errs[i] = fmt.Errorf("member %s: %w", spec.Name, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// startMember starts the member's dashboard stand-in, its load balancer stand-in (with
// Options.Traffic) and spoke, joins it and labels its MemberCluster. What it starts is recorded
// at once so that Stop finds it on a later error.
func (f *Fleet) startMember(ctx context.Context, spec MemberSpec) error {
	f.mu.Lock()
	member := f.Members[spec.Name]
	f.mu.Unlock()
	rayArgs, env, err := f.startRayAccess(spec.Name, member)
	if err != nil {
		return err
	}
	if f.opts.Traffic != nil {
		if err = f.startLoadBalancer(ctx, spec.Name, member); err != nil {
			return err
		}
	}
	if spec.Partitionable {
		if err = f.startHubProxy(spec.Name, member); err != nil {
			return err
		}
	}

	kubeconfig, _, err := member.UserKubeconfig(SpokeUser)
	if err != nil {
		return err
	}
	args := append(f.logArgs(), rayArgs...)
	args = append(args, "--report-interval="+f.opts.ReportInterval.String())
	args = append(args, f.opts.SpokeArgs...)
	spoke, err := member.StartManager(ctx, "spoke", filepath.Join(f.opts.RayFleetBin, "spoke"), kubeconfig, args, env)
	if err != nil {
		return fmt.Errorf("starting bin/spoke: %w", err)
	}
	f.mu.Lock()
	f.Spokes[spec.Name] = spoke
	f.spokeArgs[spec.Name] = managerArgs{kubeconfig: kubeconfig, args: args, env: env}
	f.mu.Unlock()

	if err := f.join(ctx, spec.Name, member); err != nil {
		return err
	}
	return f.labelMember(ctx, spec.Name, spec.Labels)
}

// startRayAccess gives the member's spoke a way to its Ray and returns the spoke's flags and
// environment for it: with RealNodes.Ray a NodeProxy into the member's Node (the spoke's
// default address templates are the in-cluster ones), otherwise a dashboard stand-in of the
// member's own.
func (f *Fleet) startRayAccess(name string, member *localcluster.Cluster) (args, env []string, err error) {
	if f.realRay() {
		url, perr := f.startNodeProxy(member)
		if perr != nil {
			return nil, nil, perr
		}
		// The API server, on loopback, is never proxied.
		return nil, []string{"HTTP_PROXY=" + url, "NO_PROXY="}, nil
	}
	dash := raydashboard.New(raydashboard.Options{DeployDelay: f.opts.DashboardDeployDelay})
	dashURL, err := dash.Start("127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	f.Dashboards[name] = dash
	f.mu.Unlock()
	return []string{
		"--dashboard-address-template=" + raydashboard.DashboardTemplate(dashURL),
		"--serve-proxy-address-template=" + raydashboard.ProxyTemplate(dashURL),
	}, nil, nil
}

// logArgs are the logging flags of bin/hub and bin/spoke: human-readable lines, at
// Options.LogLevel when set.
func (f *Fleet) logArgs() []string {
	args := []string{"--zap-devel"}
	if f.opts.LogLevel != "" {
		args = append(args, "--zap-log-level="+f.opts.LogLevel)
	}
	return args
}

// Rejoin runs `rayfleet join` for member name again, with the arguments it joined with:
// it rotates the hub's bootstrap token for the member.
func (f *Fleet) Rejoin(ctx context.Context, name string) error {
	member, ok := f.Members[name]
	if !ok {
		return fmt.Errorf("no member %s", name)
	}
	return f.join(ctx, name, member)
}

// join runs the real `rayfleet join` with both admin kubeconfigs; the member kubeconfig's
// server is the loopback URL, which the hub (on the same machine) reaches as is, or through
// the member's proxy when it is Partitionable. With Options.Traffic the guard allows node
// ports: a serve Service needs to be of type LoadBalancer for its member to report an address
// the hub can route to. The output goes to <Dir>/join-<name>.log (or <LogDir>/join-<name>.log).
func (f *Fleet) join(ctx context.Context, name string, member *localcluster.Cluster) error {
	args := []string{"join", "--hub-kubeconfig", f.Hub.Kubeconfig, "--member-kubeconfig", member.Kubeconfig,
		"--hub-namespace", f.HubNamespace, "--name", name}
	if f.opts.Traffic != nil {
		args = append(args, "--allow-node-ports")
	}
	f.mu.Lock()
	proxy := f.HubProxies[name]
	f.mu.Unlock()
	if proxy != nil {
		// The serving certificate names 127.0.0.1, so the proxy's address verifies as the
		// API server's own.
		args = append(args, "--member-server", "https://"+proxy.Addr())
	}
	cmd := exec.CommandContext(ctx, f.opts.CLI, args...)
	out, err := cmd.CombinedOutput()
	logDir := f.Dir
	if f.opts.LogDir != "" {
		logDir = f.opts.LogDir
	}
	logPath := filepath.Join(logDir, "join-"+name+".log")
	if writeErr := os.WriteFile(logPath, out, 0o600); writeErr != nil && err == nil {
		err = fmt.Errorf("writing %s: %w", logPath, writeErr)
	}
	if err != nil {
		return fmt.Errorf("rayfleet join --name %s: %w\n%s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// labelMember merges labels into the MemberCluster's: `rayfleet join` takes none, and a merge
// patch leaves the labels join applied alone.
func (f *Fleet) labelMember(ctx context.Context, name string, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return fmt.Errorf("encoding labels of MemberCluster %s: %w", name, err)
	}
	mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := f.Hub.Client.Patch(ctx, mc, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("labelling MemberCluster %s: %w", name, err)
	}
	return nil
}
