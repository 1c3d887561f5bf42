//go:build e2e

package bluegreen

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// holdFinalizer is the test's own finalizer on the partitioned member's copy, so that the
// copy's deletion is seen (its deletionTimestamp) however quickly the spoke finishes it.
const holdFinalizer = "e2e.rayfleet.io/hold"

// keptWhileUnseen is how long, once the RayService has failed over, the test checks that the
// partitioned member's copy is still there, before healing.
const keptWhileUnseen = 15 * time.Second

// failoverFigures are what failoverWhilePartitioned measured; its fields are "not run" in
// `make e2e`, which skips it for time.
type failoverFigures struct {
	failover, purged any
}

// failoverWhilePartitioned is row 8's second part, run at full length only: the victim,
// partitioned again, also has its serve endpoint failing, so the hub fails the RayService over
// to the spare. The victim's copy (same UID, not deleted) and its RayClusters must survive for
// as long as the hub cannot see the member; healed, the copy is deleted as a failover's leaving
// (the binding lists it FailedOver until then, a Purged event), and not before the hub has seen
// the member Ready again: a delete issued during the partition would be held by the proxy and
// arrive at the heal.
func (x *partitionRun) failoverWhilePartitioned() failoverFigures {
	t := x.t
	if !partitionFull() {
		return failoverFigures{failover: "not run", purged: "not run"}
	}
	t.Logf("second partition of %s, its serve endpoint failing too: the RayService fails over", x.victim)
	copyUID := x.holdVictimCopy()
	before := x.workloads()
	if err := fleet.Partition(x.victim); err != nil {
		t.Fatalf("partitioning %s from the hub: %v", x.victim, err)
	}
	healed := false
	t.Cleanup(func() {
		if !healed {
			_ = fleet.Heal(x.victim)
			_ = fleet.HealServeEndpoint(x.victim)
		}
	})
	x.waitReady(false, time.Now())
	failing := time.Now()
	if err := fleet.FailServeEndpoint(x.victim); err != nil {
		t.Fatalf("failing the serve endpoint of %s: %v", x.victim, err)
	}
	var failedOver time.Time
	eventuallyFor(t, 3*time.Minute, func(g gomega.Gomega) {
		b := binding(g, x.ns, x.name)
		g.Expect(b.Spec.Clusters).To(gomega.ConsistOf(x.other, x.spare), "placed clusters after the failover")
		cs := clusterStatus(b, x.victim)
		g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s", x.victim)
		g.Expect(cs.Leaving).NotTo(gomega.BeNil(), "%s leaving", x.victim)
		g.Expect(cs.Leaving.Reason).To(gomega.Equal(fleetv1alpha1.LeaveFailedOver), "why %s left", x.victim)
		c := memberCopy(g, x.spare, x.ns, x.name)
		g.Expect(c).NotTo(gomega.BeNil(), "replacement on %s", x.spare)
		g.Expect(ready(c)).To(gomega.BeTrue(), "replacement on %s Ready", x.spare)
		failedOver = time.Now()
	})
	t.Logf("failed over to %s %v after %s's endpoint failed", x.spare, failedOver.Sub(failing).Round(time.Millisecond), x.victim)
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		x.victimKept(g, before)
	}).WithTimeout(keptWhileUnseen).WithPolling(time.Second).Should(gomega.Succeed())

	if err := fleet.HealServeEndpoint(x.victim); err != nil {
		t.Fatalf("healing the serve endpoint of %s: %v", x.victim, err)
	}
	if err := fleet.Heal(x.victim); err != nil {
		t.Fatalf("healing the partition of %s: %v", x.victim, err)
	}
	healed = true
	deleted := x.waitVictimCopyDeleting(copyUID)
	readyAgain := x.readySince()
	if deleted.Before(readyAgain) {
		t.Errorf("%s's copy deleted at %s, before the hub saw %s Ready again (%s)", x.victim,
			deleted.Format(time.RFC3339), x.victim, readyAgain.Format(time.RFC3339))
	}
	eventually(t, func(g gomega.Gomega) {
		g.Expect(clusterStatus(binding(g, x.ns, x.name), x.victim)).To(gomega.BeNil(), "binding status of %s after the purge", x.victim)
		g.Expect(x.purgedEvent(g)).To(gomega.BeTrue(), "a Purged event naming %s", x.victim)
	})
	return failoverFigures{failover: failedOver.Sub(failing), purged: deleted.Sub(readyAgain)}
}

// partitionFull reports whether row 8 runs at full length (`make chaos`).
func partitionFull() bool { return partitionSpan() > 30*time.Second }

// holdVictimCopy puts holdFinalizer on the victim's copy and returns its UID; the finalizer is
// taken off when the test ends, whatever happened.
func (x *partitionRun) holdVictimCopy() types.UID {
	t := x.t
	c := memberCopy(gomega.NewWithT(t), x.victim, x.ns, x.name)
	if c == nil {
		t.Fatalf("no copy on %s", x.victim)
	}
	patch := client.MergeFrom(c.DeepCopy())
	controllerutil.AddFinalizer(c, holdFinalizer)
	if err := fleet.Members[x.victim].Client.Patch(context.Background(), c, patch); err != nil {
		t.Fatalf("holding the copy on %s: %v", x.victim, err)
	}
	t.Cleanup(x.releaseVictimCopy)
	return c.UID
}

// releaseVictimCopy takes holdFinalizer off the victim's copy, if it is still there.
func (x *partitionRun) releaseVictimCopy() {
	var c rayv1.RayService
	cl := fleet.Members[x.victim].Client
	if err := cl.Get(context.Background(), client.ObjectKey{Namespace: x.ns, Name: x.name}, &c); err != nil {
		return
	}
	patch := client.MergeFrom(c.DeepCopy())
	if controllerutil.RemoveFinalizer(&c, holdFinalizer) {
		if err := cl.Patch(context.Background(), &c, patch); err != nil {
			x.t.Errorf("releasing the copy on %s: %v", x.victim, err)
		}
	}
}

// victimKept checks that the victim's copy and RayClusters are the ones of before (UID, and the
// copy's generation), none being deleted, and that the binding still lists it as leaving.
func (x *partitionRun) victimKept(g gomega.Gomega, before workloadUIDs) {
	cs := clusterStatus(binding(g, x.ns, x.name), x.victim)
	g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s", x.victim)
	g.Expect(cs.Leaving).NotTo(gomega.BeNil(), "%s leaving", x.victim)
	c := memberCopy(g, x.victim, x.ns, x.name)
	g.Expect(c).NotTo(gomega.BeNil(), "the copy on %s, which the hub cannot see", x.victim)
	prefix := x.victim + " "
	want, now := workloadUIDs{}, workloadUIDs{}
	for k, v := range before {
		if strings.HasPrefix(k, prefix) {
			want[k] = v
		}
	}
	now[prefix+"RayService "+c.Name] = string(c.UID) + "/" + strconv.FormatInt(c.Generation, 10)
	var rcs rayv1.RayClusterList
	g.Expect(fleet.Members[x.victim].Client.List(context.Background(), &rcs, client.InNamespace(x.ns))).To(gomega.Succeed())
	for _, rc := range rcs.Items {
		if rc.DeletionTimestamp == nil {
			now[prefix+"RayCluster "+rc.Name] = string(rc.UID)
		}
	}
	g.Expect(now).To(gomega.Equal(want), "copy and RayClusters on %s (UID/generation)", x.victim)
}

// waitVictimCopyDeleting waits until the victim's copy (the one with uid) is being deleted,
// releases it and returns its deletionTimestamp.
func (x *partitionRun) waitVictimCopyDeleting(uid types.UID) time.Time {
	var at time.Time
	eventuallyFor(x.t, 2*time.Minute, func(g gomega.Gomega) {
		var c rayv1.RayService
		g.Expect(fleet.Members[x.victim].Client.Get(context.Background(),
			client.ObjectKey{Namespace: x.ns, Name: x.name}, &c)).To(gomega.Succeed(), "the held copy on %s", x.victim)
		g.Expect(c.UID).To(gomega.Equal(uid), "the copy on %s replaced", x.victim)
		g.Expect(c.DeletionTimestamp).NotTo(gomega.BeNil(), "the copy on %s being deleted", x.victim)
		at = c.DeletionTimestamp.Time
	})
	x.releaseVictimCopy()
	return at
}

// readySince is when the hub last found the victim Ready (whole seconds), waiting until it has.
func (x *partitionRun) readySince() time.Time {
	var at time.Time
	eventuallyFor(x.t, 2*time.Minute, func(g gomega.Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Name: x.victim}, &mc)).To(gomega.Succeed())
		c := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
		g.Expect(c).NotTo(gomega.BeNil(), "%s's Ready condition", x.victim)
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeTrue(), "%s Ready", x.victim)
		at = c.LastTransitionTime.Time
	})
	return at
}

// purgedEvent reports whether the hub recorded a Purged event for the RayService naming the
// victim.
func (x *partitionRun) purgedEvent(g gomega.Gomega) bool {
	var list corev1.EventList
	g.Expect(fleet.Hub.Client.List(context.Background(), &list, client.InNamespace(x.ns))).To(gomega.Succeed())
	for _, e := range list.Items {
		if e.InvolvedObject.Name == x.name && e.Reason == "Purged" && strings.Contains(e.Message, "from cluster "+x.victim) {
			return true
		}
	}
	return false
}
