//go:build e2e

package bluegreen

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// versionAnnotation is the head Pod template annotation a test changes to make a new
// revision, as the devfleet README's blue/green demo does.
const versionAnnotation = "e2e.rayfleet.io/version"

// firstRevisionTimeout bounds the first revision: placement, the member's RayCluster and Serve
// applications, the soak of a first rollout, and the route accepted.
const firstRevisionTimeout = 3 * time.Minute

// serveConfig is the sample's one application, served at / (what the route's pathPrefix
// routes).
const serveConfig = `applications:
  - name: berry
    import_path: berry.deployment_graph
    route_prefix: /
    deployments:
      - name: BerryStand
        num_replicas: 1
`

// blueGreen is a BlueGreen policy's tuning.
type blueGreen struct {
	stepPercent, intervalSeconds, retireAfterSeconds int32
}

// policySpec is a one-cluster BlueGreen policy over the three members, tuned by bg (a zero
// leaves the policy's default); with traffic, the hub routes the RayService through the
// fleet's Gateway at /.
func policySpec(bg blueGreen, withTraffic bool) fleetv1alpha1.PlacementPolicySpec {
	set := func(v int32) *int32 {
		if v == 0 {
			return nil
		}
		return ptr.To(v)
	}
	spec := fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](1),
		Rollout: &fleetv1alpha1.RolloutStrategy{
			Type: fleetv1alpha1.RolloutBlueGreen,
			BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
				StepPercent:        set(bg.stepPercent),
				IntervalSeconds:    set(bg.intervalSeconds),
				RetireAfterSeconds: set(bg.retireAfterSeconds),
			},
		},
	}
	if withTraffic {
		spec.Traffic = &fleetv1alpha1.TrafficSpec{
			ParentRef:  fleetv1alpha1.TrafficParentRef{Namespace: localfleet.GatewayNamespace, Name: localfleet.GatewayName},
			PathPrefix: "/",
		}
	}
	return spec
}

// newRayService is a RayService shaped like the devfleet traffic sample: one application at /,
// a head and one worker, and a LoadBalancer serve Service, which each member's load balancer
// stand-in gives the member's serve IP (the address the spoke reports and the hub routes to).
func newRayService(ns, name, policy string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, ns).Obj()
	rs.UID, rs.Generation = "", 0
	rs.Annotations = map[string]string{labels.PlacementPolicy: policy}
	rs.Spec.ServeConfigV2 = serveConfig
	rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}
	rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Annotations = map[string]string{versionAnnotation: "1"}
	return rs
}

// setUp creates ns, the policy "blue-green" with spec and the RayService name placed by it on
// the hub. At the end of the test the RayService is deleted and the test waits until no member
// holds a copy, so that the next test finds the members' serve ports free.
func setUp(t *testing.T, ns, name string, spec fleetv1alpha1.PlacementPolicySpec) {
	t.Helper()
	ctx := t.Context()
	hub := fleet.Hub.Client
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blue-green"}, Spec: spec}
	if err := hub.Create(ctx, pp); err != nil {
		t.Fatalf("creating PlacementPolicy %s/%s: %v", ns, pp.Name, err)
	}
	rs := newRayService(ns, name, pp.Name)
	if err := hub.Create(ctx, rs); err != nil {
		t.Fatalf("creating RayService %s/%s on the hub: %v", ns, name, err)
	}
	t.Cleanup(func() {
		if err := hub.Delete(context.Background(), rs); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting RayService %s/%s on the hub: %v", ns, name, err)
			return
		}
		eventuallyFor(t, 2*time.Minute, func(g gomega.Gomega) {
			g.Expect(holders(g, ns, name)).To(gomega.BeEmpty(), "members still holding a copy of %s/%s", ns, name)
		})
	})
}

// waitMembersReady waits until the hub sees every member Ready.
func waitMembersReady(t *testing.T) {
	t.Helper()
	eventuallyFor(t, 2*time.Minute, func(g gomega.Gomega) {
		for _, m := range members {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Name: m}, &mc)).To(gomega.Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeTrue(), "%s Ready", m)
		}
	})
}

// binding is the RayServiceBinding of ns/name.
func binding(g gomega.Gomega, ns, name string) *fleetv1alpha1.RayServiceBinding {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(gomega.Succeed())
	return &b
}

// blueGreenOf is the binding's BlueGreen rollout in flight, nil when none is.
func blueGreenOf(b *fleetv1alpha1.RayServiceBinding) *fleetv1alpha1.BlueGreenStatus {
	if b.Status.Rollout == nil {
		return nil
	}
	return b.Status.Rollout.BlueGreen
}

// clusterStatus is the binding's status of cluster, nil when it has none.
func clusterStatus(b *fleetv1alpha1.RayServiceBinding, cluster string) *fleetv1alpha1.ClusterStatus {
	for i := range b.Status.Clusters {
		if b.Status.Clusters[i].Name == cluster {
			return &b.Status.Clusters[i]
		}
	}
	return nil
}

// hubRayService is the hub RayService ns/name.
func hubRayService(g gomega.Gomega, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)).To(gomega.Succeed())
	return &rs
}

// memberCopy is the member's copy of ns/name, nil when it has none or only one being deleted.
func memberCopy(g gomega.Gomega, member, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	err := fleet.Members[member].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(gomega.HaveOccurred(), "reading the copy of %s/%s on %s", ns, name, member)
	if rs.DeletionTimestamp != nil {
		return nil
	}
	return &rs
}

// holders are the members that hold a copy of ns/name (one not being deleted).
func holders(g gomega.Gomega, ns, name string) []string {
	var out []string
	for _, m := range members {
		if memberCopy(g, m, ns, name) != nil {
			out = append(out, m)
		}
	}
	return out
}

// ready reports whether a RayService's Ready condition is True.
func ready(rs *rayv1.RayService) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))
}

// firstRevision waits until ns/name's first revision is rolled out on one member (the rollout
// Complete with it good, the copy Ready on it) and returns the member and the revision.
func firstRevision(t *testing.T, ns, name string) (member, revision string) {
	t.Helper()
	eventuallyFor(t, firstRevisionTimeout, func(g gomega.Gomega) {
		b := binding(g, ns, name)
		g.Expect(b.Spec.Clusters).To(gomega.HaveLen(1), "placed clusters")
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.GoodRevision).To(gomega.Equal(ro.TargetRevision), "good revision")
		member, revision = b.Spec.Clusters[0], ro.TargetRevision
		c := memberCopy(g, member, ns, name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", member)
		g.Expect(ready(c)).To(gomega.BeTrue(), "copy on %s Ready", member)
		g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, revision), "revision of the copy on %s", member)
	})
	return member, revision
}

// servesFirst waits until ns/name's first revision serves on one member, not yet good: the
// binding's baseline is the target, the copy Ready on it, the soak not over. It returns the
// member and the revision.
func servesFirst(t *testing.T, ns, name string) (member, revision string) {
	t.Helper()
	eventuallyFor(t, firstRevisionTimeout, func(g gomega.Gomega) {
		b := binding(g, ns, name)
		g.Expect(b.Spec.Clusters).To(gomega.HaveLen(1), "placed clusters")
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.TargetRevision).NotTo(gomega.BeEmpty(), "target revision")
		g.Expect(ro.BaselineRevision).To(gomega.Equal(ro.TargetRevision), "baseline revision: %s", ro.Message)
		member, revision = b.Spec.Clusters[0], ro.TargetRevision
		c := memberCopy(g, member, ns, name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", member)
		g.Expect(ready(c)).To(gomega.BeTrue(), "copy on %s Ready", member)
		g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, revision), "revision of the copy on %s", member)
	})
	return member, revision
}

// expectNotGood checks that ns/name's revision rev is not good yet: a change now comes before
// its soak ended.
func expectNotGood(t *testing.T, ns, name, rev string) {
	t.Helper()
	ro := binding(gomega.NewWithT(t), ns, name).Status.Rollout
	if ro == nil || ro.GoodRevision != "" {
		t.Fatalf("revision %s is good already (status.rollout %+v): the change would not come before its soak ended", rev, ro)
	}
}

// newVersion changes the head Pod template's version annotation of the hub RayService ns/name,
// a new revision; it retries on conflicts with the hub's own writes and returns when it wrote.
func newVersion(t *testing.T, ns, name, version string) time.Time {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs rayv1.RayService
		if err := fleet.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return err
		}
		tmpl := &rs.Spec.RayClusterSpec.HeadGroupSpec.Template
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		tmpl.Annotations[versionAnnotation] = version
		return fleet.Hub.Client.Update(t.Context(), &rs)
	})
	if err != nil {
		t.Fatalf("changing RayService %s/%s on the hub to version %s: %v", ns, name, version, err)
	}
	return time.Now()
}

// rolloutUndo runs `bin/rayfleet rollout undo ns/name` against the hub and returns when it
// returned.
func rolloutUndo(t *testing.T, ns, name string) time.Time {
	t.Helper()
	cli := filepath.Join(localfleet.DefaultRayFleetBin(), "rayfleet")
	out, err := exec.CommandContext(t.Context(), cli, "rollout", "undo", ns+"/"+name,
		"--hub-kubeconfig", fleet.Hub.Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("rayfleet rollout undo %s/%s: %v\n%s", ns, name, err, out)
	}
	t.Logf("rayfleet rollout undo %s/%s: %s", ns, name, strings.TrimSpace(string(out)))
	return time.Now()
}

// waitGreen waits until the binding names a BlueGreen rollout with blue [blue] and one green
// member other than blue, and returns the green member.
func waitGreen(t *testing.T, ns, name, blue string) string {
	t.Helper()
	var green string
	eventually(t, func(g gomega.Gomega) {
		bg := blueGreenOf(binding(g, ns, name))
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen")
		g.Expect(bg.Blue).To(gomega.Equal([]string{blue}), "blue")
		g.Expect(bg.Green).To(gomega.HaveLen(1), "green")
		green = bg.Green[0]
	})
	if green == blue {
		t.Fatalf("green %s is blue", green)
	}
	return green
}

// waitRetired waits until blue is retired: the rollout Complete with a new good revision, the
// binding placing only green, and only green holding a copy (of that revision, Ready). It
// returns the revision.
func waitRetired(t *testing.T, ns, name, green, previous string, within time.Duration) string {
	t.Helper()
	var rev string
	eventuallyFor(t, within, func(g gomega.Gomega) {
		b := binding(g, ns, name)
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.BlueGreen).To(gomega.BeNil(), "blue/green still in flight: %s", ro.Message)
		g.Expect(ro.GoodRevision).To(gomega.Equal(ro.TargetRevision), "good revision")
		g.Expect(ro.GoodRevision).NotTo(gomega.Equal(previous), "good revision")
		g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{green}), "placed clusters")
		g.Expect(holders(g, ns, name)).To(gomega.Equal([]string{green}), "members holding a copy")
		c := memberCopy(g, green, ns, name)
		g.Expect(ready(c)).To(gomega.BeTrue(), "copy on %s Ready", green)
		g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, ro.GoodRevision), "revision on %s", green)
		rev = ro.GoodRevision
	})
	return rev
}

// trafficShifting is the hub RayService's TrafficShifting condition, nil without one.
func trafficShifting(g gomega.Gomega, ns, name string) *metav1.Condition {
	return meta.FindStatusCondition(hubRayService(g, ns, name).Status.Conditions, fleetv1alpha1.ConditionTrafficShifting)
}

// waitCopyGone waits until member no longer holds a copy of ns/name (none, or one being
// deleted); seen is when the caller last knew the copy was there. It returns lastPresent, when
// the last read that found the copy started (or seen, if none did: the copy went after it),
// and gone, when a read first found it gone (the copy went before it).
func waitCopyGone(t *testing.T, member, ns, name string, seen time.Time, within time.Duration) (lastPresent, gone time.Time) {
	t.Helper()
	lastPresent = seen
	eventuallyFor(t, within, func(g gomega.Gomega) {
		start := time.Now()
		present := memberCopy(g, member, ns, name) != nil
		if present {
			lastPresent = start
		}
		g.Expect(present).To(gomega.BeFalse(), "a copy of %s/%s on %s", ns, name, member)
		gone = time.Now()
	})
	return lastPresent, gone
}
