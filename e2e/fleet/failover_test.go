//go:build e2e

package fleet

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// failoverToleration is the failover tests' tolerationSeconds: short, so that a test waits for
// the hub to see the member gone (20-30 s) and then this long.
const failoverToleration = 15 * time.Second

// failoverTimeout bounds a failover from the hub seeing a member not Ready to replacements
// Ready elsewhere: the toleration, then a placement and a RayService starting on a member that
// the other parallel tests keep busy (about 45 s alone, three times that on a loaded CI machine).
const failoverTimeout = 4 * time.Minute

// Three RayServices run on ap, their policies selecting ap and us with a short toleration, one
// for each purgeMode. ap's API server is stopped past the toleration: all fail over to us,
// where their replacements turn Ready, and the bindings keep ap as leaving (FailedOver) while
// ap cannot be reached. When ap is back, the Graceful copy is deleted, and only once the hub
// has seen ap Ready again; the Immediately copy is deleted too; the Never copy stays and the
// hub RayService says CopiesRetained.
func TestFailoverFromLostMember(t *testing.T) {
	t.Parallel()
	const ns = "failover"
	modes := map[string]fleetv1alpha1.PurgeMode{
		"graceful": fleetv1alpha1.PurgeGraceful, "never": fleetv1alpha1.PurgeNever, "immediately": fleetv1alpha1.PurgeImmediately,
	}
	o := holdMember(t, memberAP)
	lost := placeOnAP(t, ns, modes)

	stoppedAt := o.stop()
	notReady := waitMemberReady(t, memberAP, metav1.ConditionFalse)
	eventuallyFor(t, failoverTimeout, func(g gomega.Gomega) {
		for name := range modes {
			b := binding(g, ns, name)
			g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{memberUS}), "clusters of %s", name)
			expectLeaving(g, b, memberAP, fleetv1alpha1.LeaveFailedOver)
			c := memberRayService(g, memberUS, ns, name)
			g.Expect(c).NotTo(gomega.BeNil(), "replacement of %s on %s", name, memberUS)
			g.Expect(hubReady(c)).To(gomega.BeTrue(), "replacement of %s on %s Ready", name, memberUS)
		}
	})
	t.Logf("figure: member stopped -> replacement done: %v (the hub saw %s not Ready after %v)",
		time.Since(stoppedAt).Round(time.Millisecond), memberAP, notReady.LastTransitionTime.Sub(stoppedAt).Round(time.Second))
	g := gomega.NewWithT(t)
	for name := range modes {
		since := clusterStatus(binding(g, ns, name), memberAP).Leaving.Since
		g.Expect(since.Time).To(gomega.BeTemporally(">=", notReady.LastTransitionTime.Add(failoverToleration)),
			"%s left %s (not Ready since %v) before its toleration", name, memberAP, notReady.LastTransitionTime)
		g.Expect(hubEvents(g, ns, name)).To(gomega.HaveKey("FailedOver"), "events of %s", name)
	}
	// The copies on ap cannot be deleted while ap is away, and the hub must not forget them.
	g.Consistently(func(g gomega.Gomega) {
		for name := range modes {
			expectLeaving(g, binding(g, ns, name), memberAP, fleetv1alpha1.LeaveFailedOver)
		}
	}).WithTimeout(3 * settle).WithPolling(poll).Should(gomega.Succeed())

	restoredAt := o.start()
	back := waitMemberReady(t, memberAP, metav1.ConditionTrue)
	eventuallyFor(t, memberTransitionTimeout, func(g gomega.Gomega) {
		for _, name := range []string{"graceful", "immediately"} {
			g.Expect(memberRayService(g, memberAP, ns, name)).To(gomega.BeNil(), "copy of %s on %s", name, memberAP)
			g.Expect(clusterStatus(binding(g, ns, name), memberAP)).To(gomega.BeNil(), "%s's binding status of %s", name, memberAP)
		}
	})
	purgedAt := time.Now()
	deletedAt := expectPurgedOnceReady(t, ns, "graceful", back.LastTransitionTime.Time)
	t.Logf("figure: member back -> hub Ready %v, the hub deletes the Graceful copy %v, the copies are gone %v",
		back.LastTransitionTime.Sub(restoredAt).Round(time.Second), deletedAt.Sub(restoredAt).Round(time.Millisecond),
		purgedAt.Sub(restoredAt).Round(time.Millisecond))
	for _, name := range []string{"graceful", "immediately"} {
		g.Expect(hubEvents(g, ns, name)).To(gomega.HaveKey("Purged"), "events of %s", name)
	}

	expectRetained(t, ns, "never", lost["never"])
}

// placeOnAP creates a RayService per purge mode, named like its policy, placed on ap (with
// failoverToleration) and waits until every copy there is Ready; then it widens the policies to
// us too, the failover target. It returns the copies on ap.
func placeOnAP(t *testing.T, ns string, modes map[string]fleetv1alpha1.PurgeMode) map[string]*rayv1.RayService {
	t.Helper()
	createNamespace(t, ns)
	for name, mode := range modes {
		createPolicy(t, ns, name, fleetv1alpha1.PlacementPolicySpec{
			ClusterSelector: regionIn(memberAP),
			Failover: &fleetv1alpha1.FailoverPolicy{
				TolerationSeconds: ptr.To(int64(failoverToleration / time.Second)),
				PurgeMode:         mode,
				// ap may be back from another test's outage: no wait before it takes work.
				ReadmitSeconds: ptr.To[int64](0),
			},
		})
		createHubRayService(t, ns, name, name)
	}
	copies := map[string]*rayv1.RayService{}
	eventually(t, func(g gomega.Gomega) {
		for name := range modes {
			g.Expect(binding(g, ns, name).Spec.Clusters).To(gomega.Equal([]string{memberAP}), "clusters of %s", name)
			c := memberRayService(g, memberAP, ns, name)
			g.Expect(c).NotTo(gomega.BeNil(), "copy of %s on %s", name, memberAP)
			g.Expect(hubReady(c)).To(gomega.BeTrue(), "copy of %s on %s Ready", name, memberAP)
			copies[name] = c
		}
	})
	// Widened only now, so that ap surely holds them all: a member holding a RayService keeps it.
	for name := range modes {
		setPolicySelector(t, ns, name, regionIn(memberAP, memberUS))
	}
	return copies
}

// expectLeaving checks that the binding keeps cluster in its status as leaving for reason.
func expectLeaving(g gomega.Gomega, b *fleetv1alpha1.RayServiceBinding, cluster string, reason fleetv1alpha1.LeaveReason) {
	cs := clusterStatus(b, cluster)
	g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s, which %s left", cluster, b.Name)
	g.Expect(cs.Leaving).NotTo(gomega.BeNil(), "%s's status of %s: leaving", b.Name, cluster)
	g.Expect(cs.Leaving.Reason).To(gomega.Equal(reason), "why %s left %s", b.Name, cluster)
}

// expectPurgedOnceReady checks in ap's audit log that the hub deleted the copy ns/name there,
// and not before readyAgain (the hub's Ready transition of ap, in whole seconds: a deletion
// before it was surely before the hub saw ap Ready); it returns when the first deletion came.
func expectPurgedOnceReady(t *testing.T, ns, name string, readyAgain time.Time) time.Time {
	t.Helper()
	before := hubWrites(t, memberAP, ns, name, time.Time{}, readyAgain)
	after := hubWrites(t, memberAP, ns, name, readyAgain, time.Now())
	t.Logf("hub writes of %s's copy on %s: before it was Ready again %s; after %s", name, memberAP, before, after)
	g := gomega.NewWithT(t)
	g.Expect(before.verbs["delete"]).To(gomega.BeZero(), "deletes of %s's copy before %s was Ready again", name, memberAP)
	g.Expect(after.verbs["delete"]).To(gomega.BeNumerically(">=", 1), "deletes of %s's copy after %s was Ready again", name, memberAP)
	return after.first["delete"]
}

// expectRetained checks that the copy of ns/name on ap, left by a failover with purgeMode
// Never, stays (the same object, not being deleted, never deleted by the hub) and that the hub
// RayService and its binding say CopiesRetained, naming ap.
func expectRetained(t *testing.T, ns, name string, lost *rayv1.RayService) {
	t.Helper()
	eventually(t, func(g gomega.Gomega) {
		for _, conds := range [][]metav1.Condition{hubRayService(g, ns, name).Status.Conditions, binding(g, ns, name).Status.Conditions} {
			c := meta.FindStatusCondition(conds, fleetv1alpha1.ConditionCopiesRetained)
			g.Expect(c).NotTo(gomega.BeNil(), "CopiesRetained of %s", name)
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue), "CopiesRetained of %s: %s", name, c.Message)
			g.Expect(c.Reason).To(gomega.Equal(fleetv1alpha1.ReasonPurgeModeNever))
			g.Expect(c.Message).To(gomega.ContainSubstring(memberAP), "CopiesRetained of %s", name)
		}
	})
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		c := memberRayService(g, memberAP, ns, name)
		g.Expect(c).NotTo(gomega.BeNil(), "retained copy of %s on %s", name, memberAP)
		g.Expect(c.UID).To(gomega.Equal(lost.UID), "retained copy of %s on %s replaced", name, memberAP)
		g.Expect(c.DeletionTimestamp).To(gomega.BeNil(), "retained copy of %s on %s being deleted", name, memberAP)
	}).WithTimeout(5 * settle).WithPolling(poll).Should(gomega.Succeed())
	writes := hubWrites(t, memberAP, ns, name, time.Time{}, time.Now())
	gomega.NewWithT(t).Expect(writes.verbs["delete"]).To(gomega.BeZero(), "deletes of %s's retained copy: %s", name, writes)
}

// ap flaps: its API server is stopped until the hub sees it not Ready, then started and left
// Ready for a moment, for two minutes. A RayService whose policy selects only ap, created
// during the first outage, is not placed on ap while it flaps (the binding's Placed message
// says it is readmitting), and its copy is created only once ap has been Ready for
// readmitSeconds after its last return.
//
// The hub sees an API server gone only after 20-30 s (Reachable's hysteresis), so each return
// lasts that much longer than the test keeps ap up: readmitSeconds is the default 60 s, well
// above it, and the test fails if a return in the hub's eyes was not shorter.
func TestFlappingMemberGetsNoNewWorkUntilReadmitted(t *testing.T) {
	t.Parallel()
	const ns, name, policy = "flapping", "svc", "ap-only"
	const (
		readmit  = 60 * time.Second
		flapping = 2 * time.Minute
		// hold is how long ap's API server stays up between two outages.
		hold = 5 * time.Second
	)
	o := holdMember(t, memberAP)
	createNamespace(t, ns)
	createPolicy(t, ns, policy, fleetv1alpha1.PlacementPolicySpec{
		ClusterSelector: regionIn(memberAP),
		Failover:        &fleetv1alpha1.FailoverPolicy{ReadmitSeconds: ptr.To(int64(readmit / time.Second))},
	})
	began := o.stop()
	waitMemberReady(t, memberAP, metav1.ConditionFalse)
	createHubRayService(t, ns, name, policy)
	eventually(t, func(g gomega.Gomega) {
		b := binding(g, ns, name)
		g.Expect(b.Spec.Clusters).To(gomega.BeEmpty(), "clusters while %s is not Ready", memberAP)
		g.Expect(meta.IsStatusConditionFalse(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)).To(gomega.BeTrue(), "Placed")
	})

	watched := watchPlacement(t, ns, name)
	returns := 0
	for {
		o.start()
		back := waitMemberReady(t, memberAP, metav1.ConditionTrue)
		returns++
		gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
			g.Expect(binding(g, ns, name).Spec.Clusters).To(gomega.BeEmpty(), "clusters while %s flaps (return %d)", memberAP, returns)
		}).WithTimeout(hold).WithPolling(poll).Should(gomega.Succeed())
		if time.Since(began) >= flapping {
			break
		}
		o.stop()
		gone := waitMemberReady(t, memberAP, metav1.ConditionFalse)
		if up := gone.LastTransitionTime.Sub(back.LastTransitionTime.Time); up >= readmit {
			t.Fatalf("%s was Ready for %v in the hub's eyes, not less than readmitSeconds (%v): it did not flap", memberAP, up, readmit)
		}
	}
	flappedFor := time.Since(began)
	placedOn, readmitting := watched.stop()
	g := gomega.NewWithT(t)
	g.Expect(placedOn).To(gomega.BeEmpty(), "clusters the binding listed while %s flapped", memberAP)
	g.Expect(readmitting).To(gomega.ContainSubstring("readmitting"), "the binding's Placed message while %s flapped", memberAP)
	t.Logf("Placed while %s flapped: %s", memberAP, readmitting)

	var placed *rayv1.RayService
	eventuallyFor(t, readmit+timeout, func(g gomega.Gomega) {
		placed = memberRayService(g, memberAP, ns, name)
		g.Expect(placed).NotTo(gomega.BeNil(), "copy on %s", memberAP)
		g.Expect(hubReady(placed)).To(gomega.BeTrue(), "copy on %s Ready", memberAP)
	})
	ready := meta.FindStatusCondition(memberCluster(g, memberAP).Status.Conditions, fleetv1alpha1.ConditionReady)
	g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionTrue), "Ready of %s", memberAP)
	created := placed.CreationTimestamp.Time
	t.Logf("figure: %s returned %d times in %v of flapping; last return -> copy created: %v (readmitSeconds %v)", memberAP,
		returns, flappedFor.Round(time.Second), created.Sub(ready.LastTransitionTime.Time), readmit)
	g.Expect(created).To(gomega.BeTemporally(">=", ready.LastTransitionTime.Add(readmit)),
		"copy created before %s was Ready (since %v) for %v", memberAP, ready.LastTransitionTime, readmit)
	g.Expect(readmittedEvents(g, memberAP, began)).To(gomega.BeNumerically(">=", 1), "Readmitted events of %s", memberAP)
}

// readmittedEvents counts the Readmitted events of MemberCluster member since since.
func readmittedEvents(g gomega.Gomega, member string, since time.Time) int {
	var list corev1.EventList
	g.Expect(fleet.Hub.Client.List(context.Background(), &list)).To(gomega.Succeed())
	n := 0
	for _, e := range list.Items {
		at := e.EventTime.Time
		if at.IsZero() {
			at = e.LastTimestamp.Time
		}
		if e.InvolvedObject.Kind == "MemberCluster" && e.InvolvedObject.Name == member && e.Reason == "Readmitted" &&
			!at.Before(since.Truncate(time.Second)) {
			n++
		}
	}
	return n
}

// placementWatch polls a binding in the background: the clusters it listed and the first
// Placed message that said readmitting.
type placementWatch struct {
	cancel      context.CancelFunc
	done        chan struct{}
	mu          sync.Mutex
	placedOn    []string
	readmitting string
}

// watchPlacement polls the binding ns/name until stop.
func watchPlacement(t *testing.T, ns, name string) *placementWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &placementWatch{cancel: cancel, done: make(chan struct{})}
	t.Cleanup(func() { w.stop() })
	go func() {
		defer close(w.done)
		tick := time.NewTicker(poll)
		defer tick.Stop()
		for {
			var b fleetv1alpha1.RayServiceBinding
			if err := fleet.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err == nil {
				w.record(&b)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// record notes what one state of the binding shows.
func (w *placementWatch) record(b *fleetv1alpha1.RayServiceBinding) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range b.Spec.Clusters {
		if !slices.Contains(w.placedOn, c) {
			w.placedOn = append(w.placedOn, c)
		}
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPlaced); c != nil &&
		w.readmitting == "" && strings.Contains(c.Message, "readmitting") {
		w.readmitting = c.Message
	}
}

// stop ends the polling and returns the clusters the binding listed and the first Placed
// message that said readmitting ("" when none did).
func (w *placementWatch) stop() (placedOn []string, readmitting string) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.placedOn), w.readmitting
}
