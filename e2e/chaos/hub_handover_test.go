//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// bin/hub's leader election, as controller-runtime sets it up (the hub changes none of it):
// a Lease of 15 s, renewed within 10 s, tried every 2 s. client-go jitters the tries by up to
// 1.2 times the period. A standby counts the lease from when it last saw the Lease change,
// which is at one of its tries: the leader's last renewal before the kill may be seen only at
// the first try after it. So the standby holds the Lease within the lease duration and two
// jittered tries of the kill.
const (
	handoverLease       = 15 * time.Second
	handoverRetry       = 2 * time.Second
	handoverRetryJitter = 1.2
)

// handoverBound is the lease duration plus two jittered retry periods: how long after the
// leader's death its successor must hold the Lease.
var handoverBound = handoverLease + 2*time.Duration(float64(handoverRetry)*(1+handoverRetryJitter))

// Two hub replicas with leader election, as the hub chart runs them: the leader killed with
// SIGKILL (so it does not release its Lease) while a rolling rollout over three clusters and
// new RayServices are in flight. The standby takes the Lease within the lease duration plus
// the retry period, and carries on: the rollout completes, the new RayServices are placed
// once each, no copy is made twice or replaced, nothing is lost.
func TestHubLeaderKilled(t *testing.T) {
	r := scenario(t, 4, "hub leader killed (two replicas)",
		"two bin/hub replicas with leader election (Lease in the hub namespace, as the chart runs them); a rolling rollout over three members (one at a time, with a soak) and new RayServices in flight; the leader killed with SIGKILL; then started again",
		fmt.Sprintf("the standby holds the Lease within the lease duration plus the retry period (%v: 15 s + 2 × 2 s jittered by client-go's 1.2, as the standby may see the last renewal one try late) and is the leader by its own metrics; the rollout completes on every cluster with each copy's spec changed once; every new RayService placed on one member, its copy created at most once (by either replica) and never deleted; no other copy written or replaced; the killed replica comes back as a standby; no member workload lost", handoverBound))
	f := startFleet(t, func(o *localfleet.Options) { o.HubReplicas = 2 })
	bWaitMembersReady(t, f)
	leader := handoverLeader(t, f, -1)
	holder := handoverLeaseState(t, f)
	t.Logf("replica %d leads (Lease held by %s since %s)", leader, ptr.Deref(holder.Spec.HolderIdentity, ""), holder.Spec.AcquireTime.Format(time.TimeOnly))

	const ns = "handover"
	soak := span(20*time.Second, 5*time.Second)
	bSetUp(t, f, fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](3),
		Rollout: &fleetv1alpha1.RolloutStrategy{
			SoakSeconds: ptr.To(int32(soak / time.Second)), MaxUnavailableClusters: ptr.To(intstr.FromInt32(1)),
			SortingLabelKey: regionKey,
		},
	}, bRayService(ns, "rolling", "three"))
	var rev1 string
	bEventually(t, f, killRolloutTimeout, func(g gomega.Gomega) {
		b := bBinding(g, f, ns, "rolling")
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "status.rollout")
		rev1 = b.Status.Rollout.TargetRevision
		g.Expect(bExpectComplete(g, f, ns, "rolling", rev1, false)).To(gomega.HaveLen(3), "clusters")
	})
	l := snapshot(t.Context(), t, f)
	before := handoverCopies(t, f, ns, "rolling")

	changedAt := bSetImage(t, f, ns, "rolling", bNewImage)
	// Kill while the first cluster is in flight (updated, not yet done) and new RayServices
	// have just been created.
	bEventually(t, f, killRolloutTimeout, func(g gomega.Gomega) {
		b := bBinding(g, f, ns, "rolling")
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(b.Status.Rollout.TargetRevision).NotTo(gomega.Equal(rev1), "still the first revision")
		inFlight := false
		for _, cs := range b.Status.Clusters {
			inFlight = inFlight || cs.RolloutPhase == fleetv1alpha1.ClusterUpdating || cs.RolloutPhase == fleetv1alpha1.ClusterSoaking
		}
		g.Expect(inFlight).To(gomega.BeTrue(), "no cluster in flight: %s", b.Status.Rollout.Message)
	})
	fresh := make([]string, span(10, 4))
	for i := range fresh {
		fresh[i] = fmt.Sprintf("new-%d", i)
		bSetUp(t, f, fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](1)}, bRayService(ns, fresh[i], "one"))
	}
	killedAt := time.Now()
	if err := f.KillHubReplica(leader); err != nil {
		t.Fatal(err)
	}
	t.Logf("leader (replica %d) killed", leader)

	next := handoverLeader(t, f, leader)
	acquired := handoverLeaseState(t, f)
	g := gomega.NewWithT(t)
	g.Expect(ptr.Deref(acquired.Spec.HolderIdentity, "")).NotTo(gomega.Equal(ptr.Deref(holder.Spec.HolderIdentity, "")), "Lease holder")
	g.Expect(acquired.Spec.AcquireTime).NotTo(gomega.BeNil(), "the Lease's acquireTime")
	handover := acquired.Spec.AcquireTime.Sub(killedAt)
	t.Logf("replica %d holds the Lease since %s: %v after the kill", next, acquired.Spec.AcquireTime.Format(time.StampMicro), handover)
	g.Expect(handover).To(gomega.BeNumerically("<=", handoverBound), "kill to the new leader's Lease")

	var rev2 string
	bEventually(t, f, killRolloutTimeout, func(g gomega.Gomega) {
		b := bBinding(g, f, ns, "rolling")
		g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "status.rollout")
		rev2 = b.Status.Rollout.TargetRevision
		g.Expect(rev2).NotTo(gomega.Equal(rev1), "still the first revision")
		bExpectComplete(g, f, ns, "rolling", rev2, false)
		for _, name := range fresh {
			b := bBinding(g, f, ns, name)
			g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "status.rollout of %s", name)
			g.Expect(bExpectComplete(g, f, ns, name, b.Status.Rollout.TargetRevision, false)).To(gomega.HaveLen(1), "clusters of %s", name)
		}
	})
	completedAt := time.Now()

	writes := bHubWrites(t, f, ns, acquired.Spec.AcquireTime.Time, completedAt.Add(time.Second))
	var firstWrite time.Duration
	if len(writes) > 0 {
		firstWrite = writes[0].at.Sub(killedAt)
	}
	handoverExpectWrites(t, f, ns, fresh, before, changedAt, completedAt)
	for m, old := range before {
		l.allowGone(m, "RayCluster", ns, old.Status.ActiveServiceStatus.RayClusterName)
	}

	// The killed replica, started again, waits as the standby.
	if err := f.StartHubReplica(t.Context(), leader); err != nil {
		t.Fatal(err)
	}
	consistently(t, 5*time.Second, func(g gomega.Gomega) {
		now, err := f.HubLeader(context.Background())
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(now).To(gomega.Equal(next), "leader after the old one came back")
	})

	r.Add("detect (kill → new leader's Lease acquired)", handover)
	r.Add("kill → new leader's first member write", firstWrite)
	r.Add("kill → rollout and placements complete", completedAt.Sub(killedAt))
	created, updated := 0, 0
	perCopy := map[string]int{}
	for _, w := range writes {
		if perCopy[w.member+"/"+w.name]++; perCopy[w.member+"/"+w.name] == 2 {
			t.Errorf("the new leader wrote the copy of %s on %s more than once: %s", w.name, w.member, bWritesText(writes))
		}
		if w.verb == "create" {
			created++
		} else {
			updated++
		}
	}
	r.Add("new leader's Lease → its first member write", writes0(writes, acquired.Spec.AcquireTime.Time))
	r.Add("copy writes by the new leader", fmt.Sprintf("%d: %d copies of new RayServices made, %d copies updated by the rollout, none repeated (%d RayServices created at the kill)",
		len(writes), created, updated, len(fresh)))
	t.Logf("the hub's writes of copies after the handover: %s", bWritesText(writes))
	l.count(t.Context(), t, f, r)
}

// writes0 is the time from since to the first of writes; zero when there is none.
func writes0(writes []bWrite, since time.Time) time.Duration {
	if len(writes) == 0 {
		return 0
	}
	return writes[0].at.Sub(since)
}

// handoverLeader waits until a running replica other than not leads, as its metrics say, and
// the Lease is held, and returns it.
func handoverLeader(t *testing.T, f *localfleet.Fleet, not int) int {
	t.Helper()
	leader := -1
	bEventually(t, f, timeout, func(g gomega.Gomega) {
		i, err := f.HubLeader(context.Background())
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(i).To(gomega.BeNumerically(">=", 0), "no replica leads")
		g.Expect(i).NotTo(gomega.Equal(not), "the killed replica")
		leader = i
	})
	return leader
}

// handoverLeaseState reads the hub replicas' leader-election Lease.
func handoverLeaseState(t *testing.T, f *localfleet.Fleet) *coordinationv1.Lease {
	t.Helper()
	var lease coordinationv1.Lease
	key := client.ObjectKey{Namespace: f.HubNamespace, Name: localfleet.HubLeaderElectionID}
	if err := f.Hub.Client.Get(t.Context(), key, &lease); err != nil {
		t.Fatalf("reading the Lease %s: %v", key, err)
	}
	return &lease
}

// handoverCopies are the copies of ns/name by member.
func handoverCopies(t *testing.T, f *localfleet.Fleet, ns, name string) map[string]*rayv1.RayService {
	t.Helper()
	g := gomega.NewWithT(t)
	out := map[string]*rayv1.RayService{}
	for _, m := range bHolders(g, f, ns, name) {
		out[m] = bCopy(g, f, m, ns, name)
	}
	return out
}

// handoverExpectWrites checks the copies after the handover: each copy of the rolled-out
// RayService kept its UID and changed spec once; each new RayService's copy was created at
// most once, never deleted, and is its only copy.
func handoverExpectWrites(t *testing.T, f *localfleet.Fleet, ns string, fresh []string, before map[string]*rayv1.RayService, from, to time.Time) {
	t.Helper()
	g := gomega.NewWithT(t)
	for m, old := range before {
		c := bCopy(g, f, m, ns, "rolling")
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", m)
		g.Expect(c.UID).To(gomega.Equal(old.UID), "the copy on %s was replaced", m)
		g.Expect(c.Generation-old.Generation).To(gomega.Equal(int64(1)), "spec changes of the copy on %s", m)
	}
	verbs := map[string]map[string]int{}
	for _, w := range bHubWrites(t, f, ns, from, to.Add(time.Second)) {
		if verbs[w.name] == nil {
			verbs[w.name] = map[string]int{}
		}
		verbs[w.name][w.verb]++
	}
	for _, name := range fresh {
		// A copy can only be made again after a deletion. A creation whose response the killed
		// leader never read is logged 504 and not counted, so it may show no creation at all.
		g.Expect(verbs[name]["create"]).To(gomega.BeNumerically("<=", 1), "creations of %s's copy (writes %v)", name, verbs[name])
		g.Expect(verbs[name]["delete"]).To(gomega.BeZero(), "deletions of %s's copies (writes %v)", name, verbs[name])
		g.Expect(bHolders(g, f, ns, name)).To(gomega.HaveLen(1), "members holding %s", name)
	}
	g.Expect(verbs["rolling"]["delete"]+verbs["rolling"]["create"]).To(gomega.BeZero(), "copies of the rolled-out RayService made or deleted: %v", verbs["rolling"])
}
