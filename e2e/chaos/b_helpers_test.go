//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/auditlog"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// The helpers of the hub-fault scenarios (3 and 4): hub objects, member copies, the hub's
// writes in the members' audit logs, and a recorder of a binding's states.

// bNewImage is the image of a second revision: a RayCluster spec change, so that each member
// brings up a new RayCluster next to the serving one (a zero-downtime upgrade).
const bNewImage = "rayproject/ray:chaos-next"

// bEventually polls check until it passes or within expires; an agent that exits (other than
// a hub the scenario killed) stops it at once.
func bEventually(t *testing.T, f *localfleet.Fleet, within time.Duration, check func(g gomega.Gomega)) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		if err := f.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	}).WithTimeout(within).WithPolling(poll).Should(gomega.Succeed())
}

// bWaitMembersReady waits until the hub finds every member Ready.
func bWaitMembersReady(t *testing.T, f *localfleet.Fleet) {
	t.Helper()
	bEventually(t, f, timeout, func(g gomega.Gomega) {
		for name := range f.Members {
			var mc fleetv1alpha1.MemberCluster
			g.Expect(f.Hub.Client.Get(context.Background(), client.ObjectKey{Name: name}, &mc)).To(gomega.Succeed())
			g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, fleetv1alpha1.ConditionReady)).To(gomega.BeTrue(), "%s Ready", name)
		}
	})
}

// bSetUp creates the namespace ns, the PlacementPolicy "policy" with spec, and the hub
// RayService rs placed by it.
func bSetUp(t *testing.T, f *localfleet.Fleet, spec fleetv1alpha1.PlacementPolicySpec, rs *rayv1.RayService) {
	t.Helper()
	ctx := t.Context()
	ns := rs.Namespace
	if err := f.Hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: rs.Annotations[labels.PlacementPolicy]}, Spec: spec}
	if err := f.Hub.Client.Create(ctx, pp); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating PlacementPolicy %s/%s: %v", ns, pp.Name, err)
	}
	if err := f.Hub.Client.Create(ctx, rs); err != nil {
		t.Fatalf("creating RayService %s/%s on the hub: %v", ns, rs.Name, err)
	}
}

// bRayService is a small hub RayService placed by policy.
func bRayService(ns, name, policy string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).Annotation(labels.PlacementPolicy, policy).Obj()
	rs.UID, rs.Generation = "", 0
	return rs
}

// bSetImage changes the image of the hub RayService ns/name (a new revision), retrying on
// conflicts with the hub's own writes; it returns when the change was accepted.
func bSetImage(t *testing.T, f *localfleet.Fleet, ns, name, image string) time.Time {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs rayv1.RayService
		if err := f.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return err
		}
		raybuilder.SetImage(&rs.Spec.RayClusterSpec, image)
		return f.Hub.Client.Update(t.Context(), &rs)
	})
	if err != nil {
		t.Fatalf("changing the image of RayService %s/%s on the hub: %v", ns, name, err)
	}
	return time.Now()
}

// bBinding is the RayServiceBinding of ns/name.
func bBinding(g gomega.Gomega, f *localfleet.Fleet, ns, name string) *fleetv1alpha1.RayServiceBinding {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(f.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(gomega.Succeed())
	return &b
}

// bClusterStatus is the binding's status of one cluster, nil when it has none.
func bClusterStatus(b *fleetv1alpha1.RayServiceBinding, cluster string) *fleetv1alpha1.ClusterStatus {
	for i := range b.Status.Clusters {
		if b.Status.Clusters[i].Name == cluster {
			return &b.Status.Clusters[i]
		}
	}
	return nil
}

// bCopy is the member's copy of ns/name, nil when it has none.
func bCopy(g gomega.Gomega, f *localfleet.Fleet, member, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	err := f.Members[member].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(gomega.HaveOccurred(), "reading the copy of %s/%s on %s", ns, name, member)
	return &rs
}

// bHolders are the members holding a copy of ns/name, sorted.
func bHolders(g gomega.Gomega, f *localfleet.Fleet, ns, name string) []string {
	var out []string
	for m := range f.Members {
		if bCopy(g, f, m, ns, name) != nil {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

// bReady reports whether a RayService's Ready condition is True.
func bReady(rs *rayv1.RayService) bool {
	return meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))
}

// bExpectComplete checks that the rollout of ns/name is Complete on target (good, or failed
// when failed is set: then the good revision is kept), that every placed cluster's copy
// carries the revision it should end on and is Ready, and returns the placed clusters.
func bExpectComplete(g gomega.Gomega, f *localfleet.Fleet, ns, name, target string, failed bool) []string {
	b := bBinding(g, f, ns, name)
	ro := b.Status.Rollout
	g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout of %s/%s", ns, name)
	g.Expect(ro.TargetRevision).To(gomega.Equal(target), "targetRevision of %s/%s", ns, name)
	g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "phase of %s/%s: %s", ns, name, ro.Message)
	want := target
	if failed {
		g.Expect(ro.FailedRevision).To(gomega.Equal(target), "failedRevision of %s/%s", ns, name)
		want = ro.GoodRevision
	} else {
		g.Expect(ro.GoodRevision).To(gomega.Equal(target), "goodRevision of %s/%s", ns, name)
	}
	g.Expect(b.Spec.Clusters).NotTo(gomega.BeEmpty(), "clusters of %s/%s", ns, name)
	for _, m := range b.Spec.Clusters {
		cs := bClusterStatus(b, m)
		g.Expect(cs).NotTo(gomega.BeNil(), "binding status of %s on %s", name, m)
		g.Expect(cs.Revision).To(gomega.Equal(want), "binding: revision of %s on %s", name, m)
		c := bCopy(g, f, m, ns, name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy of %s on %s", name, m)
		g.Expect(c.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, want), "revision of the copy of %s on %s", name, m)
		g.Expect(bReady(c)).To(gomega.BeTrue(), "copy of %s on %s Ready", name, m)
	}
	g.Expect(bHolders(g, f, ns, name)).To(gomega.ConsistOf(b.Spec.Clusters), "members holding a copy of %s/%s", ns, name)
	return b.Spec.Clusters
}

// bWrite is one of the hub's writes of a member copy (RayService, not its status), accepted;
// its verb is "create" for a write that made the copy.
type bWrite struct {
	member, namespace, name, verb string
	at                            time.Time
}

// bHubWrites are the hub's accepted writes of member RayServices (spec and metadata: not the
// status subresource) received in [from, to), from every member's audit log, oldest first;
// ns limits them to one namespace ("" for all).
func bHubWrites(t *testing.T, f *localfleet.Fleet, ns string, from, to time.Time) []bWrite {
	t.Helper()
	var out []bWrite
	for member, c := range f.Members {
		err := auditlog.Read(c.AuditLogPath(), true, func(ev auditlog.Event) {
			ref, at := ev.ObjectRef, ev.RequestReceivedTimestamp
			if !ev.Completed() || ev.User.Username != hubOnMember ||
				ref.Resource != "rayservices" || ref.Subresource != "" || (ns != "" && ref.Namespace != ns) ||
				at.Before(from) || !at.Before(to) || ev.Code() == 0 || ev.Code() >= 300 {
				return
			}
			verb := ev.Verb
			if ev.Code() == http.StatusCreated {
				verb = "create" // the hub applies its copies (a patch), which creates a missing one
			}
			out = append(out, bWrite{member: member, namespace: ref.Namespace, name: ref.Name, verb: verb, at: at})
		})
		if err != nil {
			t.Fatalf("the audit log of %s: %v", member, err)
		}
	}
	slices.SortFunc(out, func(a, b bWrite) int { return a.at.Compare(b.at) })
	return out
}

// bWritesText says writes in a few words per copy, for the test log.
func bWritesText(writes []bWrite) string {
	counts := map[string]int{}
	var keys []string
	for _, w := range writes {
		k := fmt.Sprintf("%s %s/%s %s", w.member, w.namespace, w.name, w.verb)
		if counts[k] == 0 {
			keys = append(keys, k)
		}
		counts[k]++
	}
	slices.Sort(keys)
	out := ""
	for _, k := range keys {
		out += fmt.Sprintf("%s ×%d; ", k, counts[k])
	}
	if out == "" {
		return "none"
	}
	return out
}

// bState is one state of a binding, stamped when the recorder read it.
type bState struct {
	at time.Time
	b  *fleetv1alpha1.RayServiceBinding
}

// bRecorder reads a binding every poll and keeps each new state (by resourceVersion): the
// phases, times and weights the hub wrote, across the hub's death and restart.
type bRecorder struct {
	mu     sync.Mutex
	states []bState
	cancel context.CancelFunc
	done   chan struct{}
}

// bRecord starts recording the binding of ns/name until stop or the end of the test.
func bRecord(t *testing.T, f *localfleet.Fleet, ns, name string) *bRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &bRecorder{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(poll)
		defer tick.Stop()
		last := ""
		for {
			var b fleetv1alpha1.RayServiceBinding
			if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err == nil && b.ResourceVersion != last {
				last = b.ResourceVersion
				r.mu.Lock()
				r.states = append(r.states, bState{at: time.Now(), b: &b})
				r.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				r.last(f, ns, name, last)
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// last records the binding once more when the recording stops, so that the state the test
// just waited for is among those recorded.
func (r *bRecorder) last(f *localfleet.Fleet, ns, name, seen string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b fleetv1alpha1.RayServiceBinding
	if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &b); err == nil && b.ResourceVersion != seen {
		r.mu.Lock()
		r.states = append(r.states, bState{at: time.Now(), b: &b})
		r.mu.Unlock()
	}
}

// stop ends the recording; safe to call more than once.
func (r *bRecorder) stop() {
	r.cancel()
	<-r.done
}

// snapshot is every state recorded so far, oldest first.
func (r *bRecorder) snapshot() []bState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.states)
}

// firstAfter is when the recorder first saw a new state at or after t; zero if none.
func (r *bRecorder) firstAfter(t time.Time) time.Time {
	for _, s := range r.snapshot() {
		if !s.at.Before(t) {
			return s.at
		}
	}
	return time.Time{}
}

// bPhaseRank orders a cluster's rollout phases as a rollout moves through them.
var bPhaseRank = map[fleetv1alpha1.ClusterRolloutPhase]int{
	fleetv1alpha1.ClusterPending:  0,
	fleetv1alpha1.ClusterUpdating: 1,
	fleetv1alpha1.ClusterSoaking:  2,
	fleetv1alpha1.ClusterDone:     3,
}

// bExpectPhasesForward checks, over the recorded states of a rollout to target, that no
// cluster's phase ever went back (Done to Soaking, Soaking to Updating, …) and that an update's
// or a soak's phaseTime did not change while the cluster stayed in it (a soak restarted from
// zero would).
// It returns each cluster's phases in order, for the log.
func bExpectPhasesForward(t *testing.T, states []bState, target string) map[string][]fleetv1alpha1.ClusterRolloutPhase {
	t.Helper()
	seen := map[string][]fleetv1alpha1.ClusterRolloutPhase{}
	last := map[string]fleetv1alpha1.ClusterStatus{}
	for _, s := range states {
		ro := s.b.Status.Rollout
		if ro == nil || ro.TargetRevision != target {
			continue
		}
		for _, cs := range s.b.Status.Clusters {
			rank, known := bPhaseRank[cs.RolloutPhase]
			if !known || cs.Leaving != nil {
				continue
			}
			prev, had := last[cs.Name]
			switch {
			case !had:
				seen[cs.Name] = append(seen[cs.Name], cs.RolloutPhase)
			case rank < bPhaseRank[prev.RolloutPhase]:
				t.Errorf("%s went back from %s to %s (binding %s at %s)", cs.Name, prev.RolloutPhase, cs.RolloutPhase,
					s.b.ResourceVersion, s.at.Format(time.TimeOnly))
				seen[cs.Name] = append(seen[cs.Name], cs.RolloutPhase)
			case rank > bPhaseRank[prev.RolloutPhase]:
				seen[cs.Name] = append(seen[cs.Name], cs.RolloutPhase)
			case (cs.RolloutPhase == fleetv1alpha1.ClusterUpdating || cs.RolloutPhase == fleetv1alpha1.ClusterSoaking) &&
				prev.PhaseTime != nil && cs.PhaseTime != nil && !prev.PhaseTime.Equal(cs.PhaseTime):
				t.Errorf("%s's %s phase started again: phaseTime %s, then %s (binding %s)", cs.Name, cs.RolloutPhase,
					prev.PhaseTime.Format(time.TimeOnly), cs.PhaseTime.Format(time.TimeOnly), s.b.ResourceVersion)
			}
			last[cs.Name] = cs
		}
	}
	return seen
}
