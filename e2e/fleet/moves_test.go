//go:build e2e

package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// moveTimeout bounds a move: a new copy brought up and Ready, then the old one deleted (its
// RayClusters first).
const moveTimeout = 3 * time.Minute

// A policy whose selector changes from region us to region eu moves its RayService
// make-before-break: the binding lists eu at once and keeps us as leaving (Moved), the eu copy
// turns Ready with its applications RUNNING, and only then is the us copy deleted. The number
// of Ready copies, polled on the members throughout, never drops below one.
func TestSelectorChangeMovesMakeBeforeBreak(t *testing.T) {
	t.Parallel()
	const ns, name, policy = "move-selector", "svc", "follow"
	createNamespace(t, ns)
	createPolicy(t, ns, policy, fleetv1alpha1.PlacementPolicySpec{ClusterSelector: regionIn(memberUS)})
	createHubRayService(t, ns, name, policy)
	eventually(t, func(g gomega.Gomega) {
		g.Expect(binding(g, ns, name).Spec.Clusters).To(gomega.Equal([]string{memberUS}))
		c := memberRayService(g, memberUS, ns, name)
		g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", memberUS)
		g.Expect(hubReady(c)).To(gomega.BeTrue(), "copy on %s Ready", memberUS)
	})

	tl := watchRollout(t, ns, name, memberUS, memberEU)
	// The old member is read before the new one: a sample then counts zero only if the old
	// copy stopped being Ready before the new one was.
	counter := countReadyCopies(t, ns, name, memberUS, memberEU)
	changedAt := time.Now()
	setPolicySelector(t, ns, policy, regionIn(memberEU))

	eventuallyFor(t, moveTimeout, func(g gomega.Gomega) {
		b := binding(g, ns, name)
		g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{memberEU}), "binding clusters")
		g.Expect(clusterStatus(b, memberUS)).To(gomega.BeNil(), "binding status of %s, which was left", memberUS)
		g.Expect(memberRayService(g, memberUS, ns, name)).To(gomega.BeNil(), "copy on %s", memberUS)
		eu := memberRayService(g, memberEU, ns, name)
		g.Expect(eu).NotTo(gomega.BeNil(), "copy on %s", memberEU)
		g.Expect(hubReady(eu)).To(gomega.BeTrue(), "copy on %s Ready", memberEU)
		g.Expect(hubReady(hubRayService(g, ns, name))).To(gomega.BeTrue(), "hub Ready")
	})
	samples, least := counter.stop()
	t.Logf("Ready copies polled %d times during the move; fewest seen: %d", samples, least)
	g := gomega.NewWithT(t)
	g.Expect(samples).To(gomega.BeNumerically(">", 0), "samples of the Ready copies")
	g.Expect(least).To(gomega.BeNumerically(">=", 1), "Ready copies during the move")

	states := tl.snapshot()
	removedAt := expectMadeBeforeBroken(t, states, memberUS, memberEU)
	t.Logf("figure: policy change -> old copy (%s) removed: %v", memberUS, removedAt.Sub(changedAt).Round(time.Millisecond))

	events := hubEvents(g, ns, name)
	g.Expect(events).To(gomega.HaveKey("Moving"), "events")
	g.Expect(events).To(gomega.HaveKey("Removed"), "events")
}

// expectMadeBeforeBroken checks on the timeline that the binding showed from leaving (Moved)
// while it placed to, and that to's copy was Ready with every Serve application RUNNING before
// from's copy started to be deleted; it returns when from's copy was seen gone.
func expectMadeBeforeBroken(t *testing.T, states []observed, from, to string) time.Time {
	t.Helper()
	g := gomega.NewWithT(t)
	leaving := false
	for _, s := range of(states, sourceBinding) {
		b := bindingOf(s)
		if cs := clusterStatus(b, from); cs != nil && cs.Leaving != nil && len(b.Spec.Clusters) == 1 && b.Spec.Clusters[0] == to {
			g.Expect(cs.Leaving.Reason).To(gomega.Equal(fleetv1alpha1.LeaveMoved), "why %s is left", from)
			leaving = true
		}
	}
	g.Expect(leaving).To(gomega.BeTrue(), "no binding state placing on %s with %s leaving", to, from)

	var newest *rayv1.RayService // to's copy as last seen
	var deleting, gone time.Time
	for _, s := range states {
		switch {
		case s.source == to:
			newest = rayServiceOf(s)
		case s.source == from && deleting.IsZero() && (s.event == watch.Deleted || rayServiceOf(s).DeletionTimestamp != nil):
			g.Expect(newest).NotTo(gomega.BeNil(), "%s's copy deleted before %s's was seen", from, to)
			g.Expect(hubReady(newest)).To(gomega.BeTrue(), "%s's copy not Ready when %s's was deleted", to, from)
			for app, st := range newest.Status.ActiveServiceStatus.Applications {
				g.Expect(st.Status).To(gomega.Equal(rayv1.ApplicationStatusEnum.RUNNING),
					"application %s on %s when %s's copy was deleted", app, to, from)
			}
			g.Expect(newest.Status.ActiveServiceStatus.Applications).NotTo(gomega.BeEmpty(), "applications on %s", to)
			deleting = s.at
		}
		if s.source == from && s.event == watch.Deleted {
			gone = s.at
		}
	}
	g.Expect(deleting.IsZero()).To(gomega.BeFalse(), "the deletion of %s's copy was not seen", from)
	g.Expect(gone.IsZero()).To(gomega.BeFalse(), "%s's copy was not seen gone", from)
	return gone
}

// readyCounter polls how many copies of a RayService are Ready (and not being deleted).
type readyCounter struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	samples int
	least   int
}

// countReadyCopies polls the copies of ns/name on members, in the order given, until stop.
// A read that fails (other than not found) skips the sample.
func countReadyCopies(t *testing.T, ns, name string, members ...string) *readyCounter {
	ctx, cancel := context.WithCancel(context.Background())
	rc := &readyCounter{cancel: cancel, done: make(chan struct{}), least: len(members) + 1}
	t.Cleanup(func() { rc.stop() })
	go func() {
		defer close(rc.done)
		tick := time.NewTicker(poll / 2)
		defer tick.Stop()
		for {
			if n, ok := readyCopies(ctx, ns, name, members); ok {
				rc.mu.Lock()
				rc.samples++
				rc.least = min(rc.least, n)
				rc.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return rc
}

// readyCopies counts the Ready copies not being deleted; ok is false when a read failed.
func readyCopies(ctx context.Context, ns, name string, members []string) (n int, ok bool) {
	for _, m := range members {
		var rs rayv1.RayService
		err := fleet.Members[m].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rs)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return 0, false
		case hubReady(&rs) && rs.DeletionTimestamp == nil:
			n++
		}
	}
	return n, true
}

// stop ends the polling and returns how many samples were taken and the fewest Ready copies
// one of them saw.
func (rc *readyCounter) stop() (samples, least int) {
	rc.cancel()
	<-rc.done
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.samples, rc.least
}
