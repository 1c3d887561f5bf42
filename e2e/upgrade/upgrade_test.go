//go:build e2e

// Package upgrade upgrades a running local fleet from the previous release to the binaries in
// bin/ and checks that nothing it ran is lost: the copies the old hub placed stay where they
// are, with the same objects and Pods, the namespaces it created are labelled for Pod Security
// only when no Pod there breaks the member's level, and a namespace whose Pods do is left as
// it is and named on the MemberCluster and the hub RayService. The previous release predates
// NamespaceGrants and the fleet has none: what it placed is kept, with a KeptWithoutGrant
// warning, until the hub's admin creates the grant.
//
// The fleet has a traffic path (Traefik serving the hub's Gateway, a load balancer stand-in
// per member; see shared/localfleet), so the package runs in a network namespace of its own
// (TestMain) and needs root. One RayService is routed through the Gateway: the previous
// release wrote its HTTPRoute in the Gateway's namespace, and the upgraded hub moves it into
// the RayService's namespace make-before-break while requests through Traefik keep
// succeeding.
//
// The previous release is built from this repository's history (git archive, go build), so
// the test needs a checkout with history; RAYFLEET_PREVIOUS_RELEASE names another revision.
package upgrade

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// previousRelease is the last revision whose hub created namespaces without Pod Security
// labels and whose guard let a RayService ask for seccomp Unconfined.
const previousRelease = "5773cdf2a7d627167899b81e2d2a681ac61ac829"

// Generous waits: the machine is small and shared.
const (
	timeout = 4 * time.Minute
	poll    = 500 * time.Millisecond
)

const (
	enforceLabel = "pod-security.kubernetes.io/enforce"
	memberUS     = "us"
	memberEU     = "eu"
)

var members = []string{memberUS, memberEU}

func TestUpgradeFromPreviousRelease(t *testing.T) {
	oldBin := buildPrevious(t)
	f, err := localfleet.Start(context.Background(), localfleet.Options{
		Members: []localfleet.MemberSpec{
			{Name: memberUS, Nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"})},
			{Name: memberEU, Nodes: localcluster.FakeNodes(2, localcluster.NodeSpec{CPU: "16", Memory: "64Gi"})},
		},
		RayFleetBin: oldBin,
		KeepState:   os.Getenv("RAYFLEET_E2E_KEEP") != "",
		NoGrant:     true,
		Traffic:     &localfleet.TrafficOptions{ServeIPs: serveIPs},
	})
	if err != nil {
		t.Fatalf("starting the fleet on the previous release: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			f.DumpLogs(os.Stderr, 150)
		}
		f.Stop()
	})
	ctx := t.Context()

	t.Log("the previous release places a plain RayService and one asking for seccomp Unconfined on both members")
	place(t, f, "clean", nil)
	place(t, f, "dirty", func(rs *rayv1.RayService) {
		rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}}
	})
	t.Log("and one routed through the hub's Gateway at /, its HTTPRoute in the Gateway's namespace")
	placeRouted(t, f)
	before := map[string]snapshot{}
	for _, ns := range []string{"clean", "dirty"} {
		eventually(t, func(g gomega.Gomega) {
			g.Expect(ready(hubRayService(g, f, ns))).To(gomega.BeTrue(), "%s Ready on the previous release", ns)
			before[ns] = snap(g, f, ns)
		})
		for _, m := range members {
			var n corev1.Namespace
			if err := f.Members[m].Client.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
				t.Fatal(err)
			}
			if _, labelled := n.Labels[enforceLabel]; labelled {
				t.Fatalf("the previous release labelled namespace %s on %s: %v", ns, m, n.Labels)
			}
		}
	}

	routedBefore, reqs, routeLog := routeBeforeUpgrade(t, f)

	t.Log("upgrade: the hub, then each member's identity, guard and spoke")
	newBin := localfleet.DefaultRayFleetBin()
	upgradeStart := time.Now()
	if err := f.Upgrade(ctx, newBin); err != nil {
		t.Fatal(err)
	}
	t.Logf("upgraded in %v; %s", time.Since(upgradeStart).Round(time.Millisecond), reqs)
	checkAdopted(t, f, "clean", "dirty", routedNS)

	t.Log("the clean namespace is labelled; the dirty one is left and named; nothing moves")
	eventually(t, func(g gomega.Gomega) {
		for _, m := range members {
			var clean, dirty corev1.Namespace
			g.Expect(f.Members[m].Client.Get(ctx, client.ObjectKey{Name: "clean"}, &clean)).To(gomega.Succeed())
			g.Expect(clean.Labels).To(gomega.HaveKeyWithValue(enforceLabel, "baseline"), "namespace clean on %s", m)
			g.Expect(f.Members[m].Client.Get(ctx, client.ObjectKey{Name: "dirty"}, &dirty)).To(gomega.Succeed())
			g.Expect(dirty.Labels).NotTo(gomega.HaveKey(enforceLabel), "namespace dirty on %s", m)
			var mc fleetv1alpha1.MemberCluster
			g.Expect(f.Hub.Client.Get(ctx, client.ObjectKey{Name: m}, &mc)).To(gomega.Succeed())
			c := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionPodSecurityEnforced)
			g.Expect(c).NotTo(gomega.BeNil(), "PodSecurityEnforced on MemberCluster %s", m)
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(gomega.And(gomega.ContainSubstring("dirty"), gomega.ContainSubstring("seccompProfile")))
			g.Expect(c.Message).NotTo(gomega.ContainSubstring("namespace clean"))
		}
		c := meta.FindStatusCondition(hubRayService(g, f, "dirty").Status.Conditions, fleetv1alpha1.ConditionPodSecurityEnforced)
		g.Expect(c).NotTo(gomega.BeNil(), "PodSecurityEnforced on the hub RayService dirty/svc")
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(ready(hubRayService(g, f, "clean"))).To(gomega.BeTrue(), "clean Ready after the upgrade")
	})
	g := gomega.NewWithT(t)
	for _, ns := range []string{"clean", "dirty"} {
		g.Expect(snap(g, f, ns)).To(gomega.Equal(before[ns]), "the copies and Pods of %s/svc across the upgrade", ns)
	}

	t.Log("no NamespaceGrant yet: both stay where they are, with a KeptWithoutGrant warning")
	for _, ns := range []string{"clean", "dirty"} {
		eventually(t, func(g gomega.Gomega) {
			for kind, conds := range grantConditions(g, f, ns) {
				c := meta.FindStatusCondition(conds, fleetv1alpha1.ConditionGrantMissing)
				g.Expect(c).NotTo(gomega.BeNil(), "GrantMissing on the %s %s/svc", kind, ns)
				g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
				g.Expect(c.Reason).To(gomega.Equal(fleetv1alpha1.ReasonKeptWithoutGrant), "GrantMissing on the %s %s/svc: %s", kind, ns, c.Message)
				g.Expect(c.Message).To(gomega.And(gomega.ContainSubstring("namespace "+ns+" has no NamespaceGrant for member"),
					gomega.ContainSubstring(memberEU), gomega.ContainSubstring(memberUS)), "GrantMissing on the %s %s/svc", kind, ns)
			}
			var events corev1.EventList
			g.Expect(f.Hub.Client.List(ctx, &events, client.InNamespace(ns))).To(gomega.Succeed())
			g.Expect(events.Items).To(gomega.ContainElement(gomega.And(
				gomega.HaveField("Type", corev1.EventTypeWarning),
				gomega.HaveField("Reason", fleetv1alpha1.ReasonKeptWithoutGrant),
				gomega.HaveField("InvolvedObject.Name", "svc"))), "the KeptWithoutGrant event of %s/svc", ns)
		})
		g.Expect(snap(g, f, ns)).To(gomega.Equal(before[ns]), "the copies and Pods of %s/svc without a grant", ns)
	}

	routeWithoutGrant(t, f, reqs)

	t.Log("the hub's admin grants the namespaces: the warning goes, and nothing moves")
	grantedAt := time.Now()
	if err := f.Grant(ctx); err != nil {
		t.Fatal(err)
	}
	routeMoves(t, f, reqs, routeLog, grantedAt)
	g.Expect(snap(g, f, routedNS)).To(gomega.Equal(routedBefore), "the copies and Pods of %s/svc across the upgrade and the move", routedNS)
	for _, ns := range []string{"clean", "dirty"} {
		eventually(t, func(g gomega.Gomega) {
			for kind, conds := range grantConditions(g, f, ns) {
				g.Expect(meta.FindStatusCondition(conds, fleetv1alpha1.ConditionGrantMissing)).To(gomega.BeNil(), "GrantMissing on the %s %s/svc", kind, ns)
			}
		})
		g.Expect(snap(g, f, ns)).To(gomega.Equal(before[ns]), "the copies and Pods of %s/svc once granted", ns)
	}
}

// grantConditions are the conditions of the hub RayService ns/svc and of its binding, by kind.
func grantConditions(g gomega.Gomega, f *localfleet.Fleet, ns string) map[string][]metav1.Condition {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(f.Hub.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "svc"}, &b)).To(gomega.Succeed())
	return map[string][]metav1.Condition{"RayService": hubRayService(g, f, ns).Status.Conditions, "RayServiceBinding": b.Status.Conditions}
}

// snapshot is what must survive the upgrade: each member's copy (by UID) and its Pods (by
// name and UID).
type snapshot map[string][]string

// snap reads ns/svc's copies and Pods on every member.
func snap(g gomega.Gomega, f *localfleet.Fleet, ns string) snapshot {
	out := snapshot{}
	for _, m := range members {
		var rs rayv1.RayService
		g.Expect(f.Members[m].Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "svc"}, &rs)).To(gomega.Succeed(),
			"the copy of %s/svc on %s", ns, m)
		out[m] = append(out[m], "rayservice/"+string(rs.UID))
		var pods corev1.PodList
		g.Expect(f.Members[m].Client.List(context.Background(), &pods, client.InNamespace(ns))).To(gomega.Succeed())
		g.Expect(pods.Items).NotTo(gomega.BeEmpty(), "Pods of %s/svc on %s", ns, m)
		for _, p := range pods.Items {
			out[m] = append(out[m], "pod/"+p.Name+"/"+string(p.UID))
		}
	}
	return out
}

// place creates namespace ns on the hub with a policy placing on both members and the
// RayService ns/svc, changed by mutate (nil: none).
func place(t *testing.T, f *localfleet.Fleet, ns string, mutate func(*rayv1.RayService)) {
	t.Helper()
	ctx := t.Context()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "both"},
			Spec: fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2)}},
	}
	rs := raybuilder.MakeRayService("svc", ns).ReplicaBounds(0, 1, 2).Annotation(labels.PlacementPolicy, "both").Obj()
	rs.UID, rs.Generation = "", 0
	if mutate != nil {
		mutate(rs)
	}
	for _, obj := range append(objs, rs) {
		if err := f.Hub.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

func hubRayService(g gomega.Gomega, f *localfleet.Fleet, ns string) *rayv1.RayService {
	var rs rayv1.RayService
	g.Expect(f.Hub.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "svc"}, &rs)).To(gomega.Succeed())
	return &rs
}

func ready(rs *rayv1.RayService) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))
}

func eventually(t *testing.T, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(check).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed())
}

// buildPrevious builds bin/hub, bin/spoke and bin/rayfleet of the previous release from this
// repository's history into a temporary directory, and returns it.
func buildPrevious(t *testing.T) string {
	t.Helper()
	rev := previousRelease
	if r := os.Getenv("RAYFLEET_PREVIOUS_RELEASE"); r != "" {
		rev = r
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatalf("the upgrade test builds the previous release from git history, and this is no git checkout: %v", err)
	}
	src, bin := t.TempDir(), t.TempDir()
	var archive, stderr bytes.Buffer
	cmd := exec.Command("git", "-C", strings.TrimSpace(string(top)), "archive", rev)
	cmd.Stdout, cmd.Stderr = &archive, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("git archive %s (a checkout without history cannot build the previous release): %v\n%s", rev, err, stderr.String())
	}
	untar := exec.Command("tar", "-x", "-C", src)
	untar.Stdin = &archive
	if out, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("unpacking %s: %v\n%s", rev, err, out)
	}
	build := exec.Command("go", "build", "-trimpath", "-o", bin+string(filepath.Separator), "./cmd/hub", "./cmd/spoke", "./cmd/rayfleet")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOTOOLCHAIN=local", "GOFLAGS=-mod=readonly")
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the previous release %s: %v\n%s", rev, err, out)
	}
	t.Logf("previous release %s built in %v", rev, time.Since(start).Round(time.Second))
	return bin
}
