package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// hubCRDDir holds the CRDs the hub chart installs.
const hubCRDDir = "charts/rayfleet-hub/crds"

// perCopy is what the harness's reports take off a member's free capacity for each copy it
// holds, as a spoke's would once the copy's Pods are bound: without it every member would stay
// equally roomy and the planner would send every RayService to the same one.
var perCopy = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("2"),
	corev1.ResourceMemory: resource.MustParse("4Gi"),
	corev1.ResourcePods:   resource.MustParse("2"),
}

// memberReadyTimeout bounds the wait for the hub to find every member Ready.
const memberReadyTimeout = 2 * time.Minute

// bench is the running fleet: the hub control plane with bin/hub, and the members' bare
// control planes (no spoke, no kwok: the harness plays the spokes).
type bench struct {
	hub     *localcluster.Cluster
	hubProc *localcluster.Manager
	members map[string]*localcluster.Cluster
	names   []string
	// copiesOn counts the copies on a member, for the reports' free capacity; nil counts none.
	copiesOn func(member string) int
	// spokes and dashboards are the members' bin/spoke and Ray dashboard stand-ins (-rollout
	// only); a member's Stop stops its spoke.
	spokes     map[string]*localcluster.Manager
	dashboards []*raydashboard.Server
}

// stop stops bin/hub first, then every control plane (with its spoke), then the stand-ins.
func (b *bench) stop() {
	if b.hubProc != nil {
		b.hubProc.Stop()
	}
	var wg sync.WaitGroup
	for _, c := range append([]*localcluster.Cluster{b.hub}, mapValues(b.members)...) {
		if c != nil {
			wg.Go(c.Stop)
		}
	}
	wg.Wait()
	for _, d := range b.dashboards {
		_ = d.Close()
	}
}

// printDirs says where each cluster's state, logs and audit log (when it keeps one) stay.
func (b *bench) printDirs() {
	fmt.Fprintln(os.Stderr, "bench: hub state and logs in", b.hub.Dir)
	for _, name := range b.names {
		fmt.Fprintf(os.Stderr, "bench: %s state and logs in %s\n", name, b.members[name].Dir)
	}
}

func mapValues(m map[string]*localcluster.Cluster) []*localcluster.Cluster {
	out := make([]*localcluster.Cluster, 0, len(m))
	for _, c := range m {
		out = append(out, c)
	}
	return out
}

// controlPlaneOptions are the bare control planes of the placement benchmark: the hub and
// members without scheduler or kwok, all auditing the hub's identity only.
func controlPlaneOptions(cfg config) ([]localcluster.Options, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return nil, err
	}
	memberCRDs, err := localcluster.SpokeCRDDir("")
	if err != nil {
		return nil, err
	}
	policy := benchutil.AuditPolicy(hubUser, cfg.auditLevel)
	all := []localcluster.Options{{
		Name: "hub", CRDDirs: []string{filepath.Join(root, hubCRDDir)}, AuditPolicy: policy, KeepState: cfg.keep,
	}}
	for i := range cfg.members {
		all = append(all, localcluster.Options{
			Name: memberName(i), CRDDirs: []string{memberCRDs}, AuditPolicy: policy, KeepState: cfg.keep,
		})
	}
	return all, nil
}

func memberName(i int) string { return fmt.Sprintf("member-%d", i+1) }

// startControlPlanes starts the hub (all[0]) and the members at once, since each mostly waits
// on its API server.
func startControlPlanes(ctx context.Context, all []localcluster.Options) (*bench, error) {
	clusters := make([]*localcluster.Cluster, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, o := range all {
		wg.Go(func() { clusters[i], errs[i] = localcluster.Start(ctx, o) })
	}
	wg.Wait()
	b := &bench{hub: clusters[0], members: map[string]*localcluster.Cluster{}}
	for _, c := range clusters[1:] {
		if c != nil {
			b.members[c.Name] = c
			b.names = append(b.names, c.Name)
		}
	}
	if err := errors.Join(errs...); err != nil {
		b.stop()
		return nil, fmt.Errorf("starting control planes: %w", err)
	}
	return b, nil
}

// startHub runs bin/hub against the hub control plane as hubUser.
func (b *bench) startHub(ctx context.Context, cfg config) error {
	kubeconfig, _, err := b.hub.UserKubeconfig(hubUser)
	if err != nil {
		return err
	}
	args := append([]string{"--hub-namespace=" + labels.DefaultHubNamespace}, cfg.hubArgs...)
	b.hubProc, err = b.hub.StartManager(ctx, "hub", cfg.hubBin, kubeconfig, args, nil)
	if err != nil {
		return fmt.Errorf("starting bin/hub: %w", err)
	}
	return nil
}

// join does what `rayfleet join` leaves behind on the hub: each member's kubeconfig Secret
// (for hubUser, so that the members' audit logs count the hub's writes there) and its
// MemberCluster, named alike.
func (b *bench) join(ctx context.Context) error {
	if err := b.hub.CreateNamespace(ctx, labels.DefaultHubNamespace); err != nil {
		return err
	}
	for _, name := range b.names {
		path, _, err := b.members[name].UserKubeconfig(hubUser)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading kubeconfig of %s: %w", name, err)
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: labels.DefaultHubNamespace, Name: name,
				Labels: map[string]string{fleetv1alpha1.KubeconfigSecretLabel: labels.True}},
			Data: map[string][]byte{fleetv1alpha1.DefaultKubeconfigKey: data},
		}
		if err := b.hub.Client.Create(ctx, secret); err != nil {
			return fmt.Errorf("creating kubeconfig Secret of %s: %w", name, err)
		}
		mc := &fleetv1alpha1.MemberCluster{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{
				Name: name, Key: fleetv1alpha1.DefaultKubeconfigKey,
			}},
		}
		if err := b.hub.Client.Create(ctx, mc); err != nil {
			return fmt.Errorf("creating MemberCluster %s: %w", name, err)
		}
	}
	return nil
}

// heartbeat writes every member's ClusterReport now and then every interval until ctx ends,
// as the spokes would; errors after the first round are printed, not fatal.
func (b *bench) heartbeat(ctx context.Context, interval time.Duration) error {
	for _, name := range b.names {
		report := &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: fleetv1alpha1.ClusterReportName}}
		if err := b.members[name].Client.Create(ctx, report); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ClusterReport on %s: %w", name, err)
		}
	}
	return every(ctx, interval, b.writeReports)
}

// every runs write now, failing with its error, and then every interval until ctx ends, printing
// the errors of later rounds: the spokes' heartbeat, played by the benchmark.
func every(ctx context.Context, interval time.Duration, write func(context.Context) error) error {
	if err := write(ctx); err != nil {
		return err
	}
	go func() {
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				if err := write(ctx); err != nil && ctx.Err() == nil {
					fmt.Fprintln(os.Stderr, "bench: heartbeat:", err)
				}
			}
		}
	}()
	return nil
}

// writeReports sets each member's ClusterReport status: a fresh heartbeat and room for far more
// than the benchmark places (capacity never rules a member out), less what its copies hold.
func (b *bench) writeReports(ctx context.Context) error {
	room := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100000"),
		corev1.ResourceMemory: resource.MustParse("100Ti"),
		corev1.ResourcePods:   resource.MustParse("100000"),
	}
	for _, name := range b.names {
		copies := 0
		if b.copiesOn != nil {
			copies = b.copiesOn(name)
		}
		free := corev1.ResourceList{}
		for k, q := range room {
			q = q.DeepCopy()
			for range copies {
				q.Sub(perCopy[k])
			}
			free[k] = q
		}
		var report fleetv1alpha1.ClusterReport
		cl := b.members[name].Client
		if err := cl.Get(ctx, client.ObjectKey{Name: fleetv1alpha1.ClusterReportName}, &report); err != nil {
			return fmt.Errorf("reading ClusterReport on %s: %w", name, err)
		}
		report.Status = fleetv1alpha1.ClusterReportStatus{
			HeartbeatTime: metav1.Now(), AgentVersion: "bench", KubernetesVersion: "bench",
			Capacity: fleetv1alpha1.ClusterCapacity{Allocatable: room, Free: free},
			Nodes:    fleetv1alpha1.NodeCounts{Total: 3, Ready: 3},
		}
		if err := cl.Status().Update(ctx, &report); err != nil {
			return fmt.Errorf("writing ClusterReport on %s: %w", name, err)
		}
	}
	return nil
}

// waitMembersReady waits until the hub has found every MemberCluster Ready.
func (b *bench) waitMembersReady(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, memberReadyTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range b.names {
			var mc fleetv1alpha1.MemberCluster
			if err := b.hub.Client.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
				return false, nil //nolint:nilerr // not there yet is worth another look
			}
			if !meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the members to turn Ready: %w", err)
	}
	return nil
}
