package main

// The scale benchmark's fleet (-sim): the hub control plane running simhub (bin/hub's wiring
// with simulated members), and ONE member control plane backing every simulated member. The
// harness joins the members as `rayfleet join` would (a kubeconfig Secret and a MemberCluster
// each, labelled by region and GPU) and writes their ClusterReports every heartbeat interval,
// as their spokes would.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/hub/simmembers"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// simMemberReadyTimeout bounds the wait for the hub to find every simulated member Ready.
const simMemberReadyTimeout = 5 * time.Minute

// simFleet is one run's fleet.
type simFleet struct {
	hub, member *localcluster.Cluster
	hubProc     *localcluster.Manager
	names       []string
	// hubClient and memberClient are admin clients without client-side rate limits: the
	// harness's own pace must not be what the figures measure.
	hubClient, memberClient client.Client
	copies                  *simCopies
}

// stop stops simhub, then both control planes.
func (f *simFleet) stop() {
	if f.hubProc != nil {
		f.hubProc.Stop()
	}
	var wg sync.WaitGroup
	for _, c := range []*localcluster.Cluster{f.hub, f.member} {
		if c != nil {
			wg.Go(c.Stop)
		}
	}
	wg.Wait()
}

// startSimFleet starts the hub and the member control planes, both auditing every request of
// the hub's identity but its watches.
func startSimFleet(ctx context.Context, cfg config) (*simFleet, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	spokeCRDs, err := localcluster.SpokeCRDDir("")
	if err != nil {
		return nil, err
	}
	memberCRDs, err := simMemberCRDs(spokeCRDs)
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(memberCRDs) }()
	policy := benchutil.AuditPolicyVerbs(hubUser, cfg.auditLevel, append(benchutil.ReadVerbs, benchutil.WriteVerbs...)...)
	b, err := startControlPlanes(ctx, []localcluster.Options{
		{Name: "hub", CRDDirs: []string{filepath.Join(root, hubCRDDir)}, AuditPolicy: policy, KeepState: cfg.keep},
		{Name: "member", CRDDirs: []string{memberCRDs}, AuditPolicy: policy, KeepState: cfg.keep},
	})
	if err != nil {
		return nil, err
	}
	f := &simFleet{hub: b.hub, member: b.members["member"], names: simmembers.Names(cfg.members)}
	if f.hubClient, err = unthrottled(f.hub); err == nil {
		f.memberClient, err = unthrottled(f.member)
	}
	if err != nil {
		f.stop()
		return nil, err
	}
	return f, nil
}

// clusterReportRule is the ClusterReport CRD's rule that a member's report is named "local";
// the backing server holds one report per member, "<member>-local", and checks that instead.
const (
	clusterReportCRD     = "fleet.rayfleet.io_clusterreports.yaml"
	clusterReportRule    = "rule: self.metadata.name == 'local'"
	clusterReportSimRule = "rule: self.metadata.name.endsWith('-local')"
	clusterReportMessage = "message: the ClusterReport must be named 'local'"
	clusterReportSimMsg  = "message: a simulated member's ClusterReport must be named '<member>-local'"
)

// simMemberCRDs copies the member CRDs of dir into a temporary directory, the ClusterReport's
// name rule relaxed for the backing server; the caller removes the directory.
func simMemberCRDs(dir string) (string, error) {
	out, err := os.MkdirTemp("", "rayfleet-sim-crds-")
	if err != nil {
		return "", err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("reading the member CRDs: %w", err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", fmt.Errorf("reading CRD %s: %w", e.Name(), err)
		}
		if e.Name() == clusterReportCRD {
			text := string(data)
			if !strings.Contains(text, clusterReportRule) {
				return "", fmt.Errorf("CRD %s no longer has the rule %q the simulated members relax", e.Name(), clusterReportRule)
			}
			text = strings.Replace(text, clusterReportRule, clusterReportSimRule, 1)
			data = []byte(strings.Replace(text, clusterReportMessage, clusterReportSimMsg, 1))
		}
		if err := os.WriteFile(filepath.Join(out, e.Name()), data, 0o600); err != nil {
			return "", err
		}
	}
	return out, nil
}

// unthrottled is an admin client of c without client-side rate limiting.
func unthrottled(c *localcluster.Cluster) (client.Client, error) {
	rc := rest.CopyConfig(c.Config)
	rc.QPS, rc.Burst = -1, 0
	cl, err := client.New(rc, client.Options{Scheme: localcluster.Scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client of %s: %w", c.Name, err)
	}
	return cl, nil
}

// buildSimHub builds simhub into dir and returns its path and the commit it was built from
// ("+dirty" when hub/ or cmd/hub had uncommitted changes).
func buildSimHub(ctx context.Context, dir string) (bin, commit string, err error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", "", err
	}
	bin = filepath.Join(dir, "simhub")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./e2e/bench/hub/simhub")
	build.Dir = root
	if out, berr := build.CombinedOutput(); berr != nil {
		return "", "", fmt.Errorf("building simhub: %w\n%s", berr, out)
	}
	rev, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return bin, "unknown", nil //nolint:nilerr // the commit only labels the report
	}
	commit = strings.TrimSpace(string(rev))
	dirty, err := exec.CommandContext(ctx, "git", "-C", root, "status", "--porcelain", "--", "hub", "cmd/hub").Output()
	if err == nil && len(strings.TrimSpace(string(dirty))) > 0 {
		commit += "+dirty"
	}
	return bin, commit, nil
}

// startHub runs simhub against the hub control plane, its members backed by the member
// control plane, both as hubUser; with leader election, as the hub chart runs bin/hub, unless
// -leader-elect=false (on a starved machine the hub API server can miss the lease's renewal
// deadline and simhub exits, as bin/hub would).
func (f *simFleet) startHub(ctx context.Context, cfg config, bin string, extra ...string) error {
	hubKubeconfig, _, err := f.hub.UserKubeconfig(hubUser)
	if err != nil {
		return err
	}
	memberKubeconfig, _, err := f.member.UserKubeconfig(hubUser)
	if err != nil {
		return err
	}
	args := append([]string{
		"--hub-namespace=" + labels.DefaultHubNamespace, fmt.Sprintf("--leader-elect=%t", cfg.sim.leaderElect),
		"--sim-member-kubeconfig=" + memberKubeconfig,
		fmt.Sprintf("--sim-members=%d", cfg.members),
		"--sim-namespaces=" + benchNamespace,
	}, extra...)
	args = append(args, cfg.hubArgs...)
	env, err := hubEnv(cfg.sim.memoryLimit)
	if err != nil {
		return err
	}
	if f.hubProc, err = f.hub.StartManager(ctx, "simhub", bin, hubKubeconfig, args, env); err != nil {
		return fmt.Errorf("starting simhub: %w", err)
	}
	return nil
}

// join creates what `rayfleet join` leaves on the hub for every member: its kubeconfig Secret
// (which the MemberCluster controller checks; simhub engages the members without reading it)
// and its labelled MemberCluster; and the hub admin's grant of every member to the bench's
// namespace, without which nothing is placed.
func (f *simFleet) join(ctx context.Context) error {
	if err := f.hub.CreateNamespace(ctx, labels.DefaultHubNamespace); err != nil {
		return err
	}
	if err := localfleet.CreateGrant(ctx, f.hubClient); err != nil {
		return err
	}
	path, _, err := f.member.UserKubeconfig(hubUser)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the member kubeconfig: %w", err)
	}
	return forEach(f.names, 16, func(i int, name string) error {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: labels.DefaultHubNamespace, Name: name,
				Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}},
			Data: map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: data},
		}
		if err := f.hubClient.Create(ctx, secret); err != nil {
			return fmt.Errorf("creating kubeconfig Secret of %s: %w", name, err)
		}
		mc := &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: simMemberLabels(i)},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{
				Name: name, Key: fleetv1alpha1.DefaultKubeconfigKey,
			}},
		}
		if err := f.hubClient.Create(ctx, mc); err != nil {
			return fmt.Errorf("creating MemberCluster %s: %w", name, err)
		}
		return nil
	})
}

// forEach calls fn for every name, workers at a time, and joins the errors.
func forEach(names []string, workers int, fn func(i int, name string) error) error {
	errs := make([]error, len(names))
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, name := range names {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i, name)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// heartbeat creates every member's ClusterReport on the backing server, writes their status
// now and then every interval until ctx ends, as the spokes would; errors after the first
// round are printed, not fatal.
func (f *simFleet) heartbeat(ctx context.Context, interval time.Duration) error {
	err := forEach(f.names, 16, func(_ int, name string) error {
		report := &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{
			Name:   simmembers.BackingName(name, fleetv1alpha1.ClusterReportName),
			Labels: map[string]string{simmembers.MemberLabel: name},
		}}
		if err := f.memberClient.Create(ctx, report); err != nil {
			return fmt.Errorf("creating ClusterReport of %s: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return every(ctx, interval, f.writeReports)
}

// writeReports patches every member's ClusterReport status: a fresh heartbeat, its capacity,
// and its free capacity less what its copies hold.
func (f *simFleet) writeReports(ctx context.Context) error {
	held := f.copies.held()
	now := metav1.Now()
	return forEach(f.names, 16, func(i int, name string) error {
		room := simCapacity(i)
		free := corev1.ResourceList{}
		for k, q := range room {
			q = q.DeepCopy()
			if h, ok := held[name][k]; ok {
				q.Sub(h)
			}
			free[k] = q
		}
		patch, err := json.Marshal(map[string]any{"status": fleetv1alpha1.ClusterReportStatus{
			HeartbeatTime: now, AgentVersion: "bench", KubernetesVersion: "bench",
			Capacity: fleetv1alpha1.ClusterCapacity{Allocatable: room, Free: free},
			Nodes:    fleetv1alpha1.NodeCounts{Total: 3, Ready: 3},
		}})
		if err != nil {
			return err
		}
		report := &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{
			Name: simmembers.BackingName(name, fleetv1alpha1.ClusterReportName)}}
		if err := f.memberClient.Status().Patch(ctx, report, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("writing ClusterReport of %s: %w", name, err)
		}
		return nil
	})
}

// waitMembersReady waits until the hub has found every MemberCluster Ready.
func (f *simFleet) waitMembersReady(ctx context.Context) error {
	ready := 0
	err := wait.PollUntilContextTimeout(ctx, time.Second, simMemberReadyTimeout, true, func(ctx context.Context) (bool, error) {
		var mcs fleetv1alpha1.MemberClusterList
		if err := f.hubClient.List(ctx, &mcs); err != nil {
			return false, nil //nolint:nilerr // worth another look
		}
		ready = 0
		for i := range mcs.Items {
			if meta.IsStatusConditionTrue(mcs.Items[i].Status.Conditions, fleetv1alpha1.ConditionReady) {
				ready++
			}
		}
		return ready == len(f.names), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the members to turn Ready (%d of %d): %w", ready, len(f.names), err)
	}
	return nil
}
