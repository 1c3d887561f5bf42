//go:build e2e

package fleetray

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// The Rolling rollout's tuning: a short soak, and a progress deadline that a Serve-config
// change on a running head meets with room to spare (seconds) while a broken app, which Ray
// reports DEPLOY_FAILED within seconds, misses it.
const (
	rollingSoakSeconds     = 5
	rollingDeadlineSeconds = 40
	rollingTimeout         = 6 * time.Minute
)

// TestRollingOnRealRay places a hub RayService on both members and rolls two changes of its
// Serve config through them, east first (sorted by region): v1 to v2, done on each member only
// once real Ray reports the application RUNNING, and then an application that raises at import,
// which stalls at east, is rolled back there and never reaches west.
func TestRollingOnRealRay(t *testing.T) {
	const ns, name = "fleetray-rolling", "rolling"
	f, created := setUp(t, ns, name, fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](int32(len(members))),
		Rollout: &fleetv1alpha1.RolloutStrategy{
			Type:                    fleetv1alpha1.RolloutRolling,
			SoakSeconds:             ptr.To[int32](rollingSoakSeconds),
			ProgressDeadlineSeconds: ptr.To[int32](rollingDeadlineSeconds),
			AutoRollback:            true,
			SortingLabelKey:         regionKey,
		},
	}, nil)
	g := gomega.NewWithT(t)
	rev1 := waitRolledOut(t, f, ns, name, "", firstAnswerTimeout)
	t.Logf("revision %s done on both members %s after creation", rev1, time.Since(created).Round(time.Second))

	seen := watchRevisions(t, f, ns, name)
	changed := time.Now()
	setServeConfig(t, f, ns, name, rayapp.ServeConfig("v2"))
	rev2 := waitRolledOut(t, f, ns, name, rev1, rollingTimeout)
	east, west := seen.first(memberEast, rev2), seen.first(memberWest, rev2)
	t.Logf("revision %s done on both members %s after the change; east got it %s, west %s after it",
		rev2, time.Since(changed).Round(time.Second), sinceOrNever(east, changed), sinceOrNever(west, changed))
	g.Expect(east).NotTo(gomega.BeZero(), "east never got %s", rev2)
	g.Expect(west).To(gomega.BeTemporally(">", east), "west got %s before east", rev2)

	broken := time.Now()
	setServeConfig(t, f, ns, name, rayapp.ServeConfig("v3")+rayapp.BrokenApp)
	var rev3 string
	eventuallyFor(t, f, rollingTimeout, func(g gomega.Gomega) {
		ro := binding(g, f, ns, name).Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		rev3 = ro.TargetRevision
		g.Expect(rev3).NotTo(gomega.Equal(rev2), "still %s", rev2)
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.FailedRevision).To(gomega.Equal(rev3), "failedRevision")
		g.Expect(ro.GoodRevision).To(gomega.Equal(rev2), "goodRevision")
		for _, m := range members {
			expectRunning(g, f, m, ns, name, rev2)
		}
	})
	t.Logf("revision %s (an app raising at import) stalled and rolled back %s after the change; east got it %s after it",
		rev3, time.Since(broken).Round(time.Second), sinceOrNever(seen.first(memberEast, rev3), broken))
	g.Expect(seen.first(memberEast, rev3).IsZero()).To(gomega.BeFalse(), "east never got the broken revision")
	g.Expect(seen.first(memberWest, rev3).IsZero()).To(gomega.BeTrue(), "west got the broken revision")
	seen.stop()
}

// waitRolledOut waits until a revision other than prev is good and done on every member, with
// real Ray reporting the test app RUNNING on each, and returns it.
func waitRolledOut(t *testing.T, f *localfleet.Fleet, ns, name, prev string, timeout time.Duration) string {
	t.Helper()
	var rev string
	eventuallyFor(t, f, timeout, func(g gomega.Gomega) {
		b := binding(g, f, ns, name)
		g.Expect(b.Spec.Clusters).To(gomega.ConsistOf(memberEast, memberWest), "placed clusters")
		ro := b.Status.Rollout
		g.Expect(ro).NotTo(gomega.BeNil(), "status.rollout")
		g.Expect(ro.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout: %s", ro.Message)
		g.Expect(ro.GoodRevision).To(gomega.Equal(ro.TargetRevision), "good revision")
		g.Expect(ro.GoodRevision).NotTo(gomega.Equal(prev), "still %s", prev)
		rev = ro.GoodRevision
		for _, m := range members {
			expectRunning(g, f, m, ns, name, rev)
		}
	})
	return rev
}

// expectRunning checks that member's copy of ns/name carries rev and that Ray reports the test
// app RUNNING on its serving cluster, and nothing else.
func expectRunning(g gomega.Gomega, f *localfleet.Fleet, member, ns, name, rev string) {
	var rs rayv1.RayService
	g.Expect(f.Members[member].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)).To(gomega.Succeed())
	g.Expect(rs.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, rev), "revision on %s", member)
	apps := rs.Status.ActiveServiceStatus.Applications
	g.Expect(apps).To(gomega.HaveLen(1), "applications on %s: %+v", member, apps)
	g.Expect(apps["versioned"].Status).To(gomega.Equal(rayv1.ApplicationStatusEnum.RUNNING), "application on %s: %+v", member, apps)
}

// revisions records when each member's copy of a RayService first carried each revision,
// polled every poll until stopped.
type revisions struct {
	mu     sync.Mutex
	firsts map[string]time.Time
	cancel context.CancelFunc
	done   chan struct{}
}

// watchRevisions starts recording the revisions of the members' copies of ns/name.
func watchRevisions(t *testing.T, f *localfleet.Fleet, ns, name string) *revisions {
	ctx, cancel := context.WithCancel(context.Background())
	r := &revisions{firsts: map[string]time.Time{}, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		tick := time.NewTicker(poll / 4)
		defer tick.Stop()
		for {
			for _, m := range members {
				var rs rayv1.RayService
				if err := f.Members[m].Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
					continue
				}
				key := m + "/" + rs.Annotations[labels.Revision]
				r.mu.Lock()
				if _, ok := r.firsts[key]; !ok {
					r.firsts[key] = time.Now()
				}
				r.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(r.stop)
	return r
}

// first is when member's copy first carried rev, zero if never.
func (r *revisions) first(member, rev string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firsts[member+"/"+rev]
}

// stop stops recording.
func (r *revisions) stop() {
	r.cancel()
	<-r.done
}
