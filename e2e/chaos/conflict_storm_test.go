//go:build e2e

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// The storm: stormWriters writers, each patching the hub RayService every stormPace or so
// (with up to as much again of jitter) for the scenario's span.
const (
	stormWriters = 5
	stormPace    = 500 * time.Millisecond
	// stormSoak is the policy's soakSeconds: short, so that the last spec reaches the three
	// members in well under a minute once the storm ends.
	stormSoak = 5
	// stormKey is the head Pod template annotation each write sets: a RayCluster change, so
	// that every revision a member gets is a zero-downtime upgrade through a new RayCluster.
	stormKey = "chaos.rayfleet.io/writer"
	// stormConverge bounds the wait for the fleet to settle on the last spec.
	stormConverge = 6 * time.Minute
)

// Scenario 5: five writers patch the same hub RayService's spec for span(60s, 20s), each with
// its own values (the head Pod template annotation stormKey, which changes the RayCluster, and
// the Serve deployment's num_replicas, which changes the Serve config), as JSON merge patches
// carrying the resourceVersion they read, so that concurrent writers conflict and retry. The
// RayService is placed on all three members with a Rolling rollout. Watches record every spec
// the hub RayService had, every state of the three copies and of their RayClusters. The fleet
// must end on the last spec (every copy carries its hash, Ready, the rollout Complete); no
// copy may ever carry a spec the hub RayService did not have; no member may run a third
// revision: never a third RayCluster for the RayService besides its active and pending ones (a
// cluster the spoke retired, awaiting its deletion delay, serves no revision and is counted
// apart), and never a new spec while a RayCluster is pending (every write changes the
// RayCluster, so such a spec would need a third).
func TestConflictStorm(t *testing.T) {
	r := scenario(t, 5, "conflict storm",
		fmt.Sprintf("%d writers merge-patch one hub RayService's spec (RayCluster and Serve config) for %v, retrying on conflict; placed on 3 members, Rolling rollout (soak %ds)",
			stormWriters, span(time.Minute, 20*time.Second), stormSoak),
		"the fleet ends on the last spec (every copy carries its hash, Ready, rollout Complete); every spec seen on a copy is one the hub RayService had; "+
			"no third revision: no member ever has more than 2 live RayClusters for it (active + pending), nor gets a new spec while a RayCluster is pending; nothing lost")
	f := startFleet(t, nil)
	ctx := t.Context()
	const ns, name = "storm", "svc"
	initial := stormSetUp(t, f, ns, name)
	rec := stormWatch(t, f, ns, name)
	l := snapshot(ctx, t, f)
	for member, cluster := range initial {
		// Replaced by the storm's first upgrade there, then deleted on the spoke's schedule.
		l.allowGone(member, "RayCluster", ns, cluster)
	}

	began := time.Now()
	w := stormRun(t, f, ns, name, span(time.Minute, 20*time.Second))
	lastWrite := time.Now()
	var final rayv1.RayService
	if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &final); err != nil {
		t.Fatalf("reading the hub RayService after the storm: %v", err)
	}
	finalHash := cSpecHash(&final.Spec)
	eventually(t, stormConverge, func(g gomega.Gomega) { stormExpectConverged(g, f, ns, name, finalHash) })
	converged := time.Now()
	// The watches catch up with the states the check above read.
	consistently(t, 2*time.Second, func(g gomega.Gomega) { stormExpectConverged(g, f, ns, name, finalHash) })
	rec.stop()

	hubSpecs := rec.hubSpecs()
	for h := range w.results {
		hubSpecs[h] = true
	}
	seen, foreign := rec.copySpecs(hubSpecs)
	for _, s := range foreign {
		t.Errorf("a member copy carried a spec the hub RayService never had: %s", s)
	}
	for _, member := range slices.Sorted(maps.Keys(f.Members)) {
		if live := rec.maxLive[member]; live > 2 {
			t.Errorf("%s had %d live RayClusters for %s/%s at once (%s): a third revision", member, live, ns, name, rec.atMax[member])
		}
	}
	for _, s := range rec.midUpgrade {
		t.Errorf("a member was given a new spec mid-upgrade (a third revision): %s", s)
	}
	if rec.copyDeleted != "" {
		t.Errorf("a member copy was deleted during the storm: %s", rec.copyDeleted)
	}
	if w.gaveUp != nil {
		t.Errorf("a writer gave up: %v", w.gaveUp)
	}

	hubWrites, perMember := 0, []string{}
	for _, member := range slices.Sorted(maps.Keys(f.Members)) {
		n := cHubRayServiceWrites(t, f, member, ns, began, converged.Add(time.Second))
		hubWrites += n.Spec
		perMember = append(perMember, fmt.Sprintf("%s %d", member, n.Spec))
	}
	r.Add("specs written", w.written)
	r.Add("conflicts retried", w.conflicts)
	r.Add("hub specs observed by watch", len(rec.hubSpecs()))
	r.Add("distinct specs seen on members", len(seen))
	r.Add("member spec writes by the hub", fmt.Sprintf("%d (%s)", hubWrites, strings.Join(perMember, ", ")))
	r.Add("specs applied to a member mid-upgrade", len(rec.midUpgrade))
	r.Add("most live RayClusters per member", rec.maxOf(rec.maxLive))
	r.Add("most RayClusters per member, retiring included", rec.maxOf(rec.maxAll))
	r.Add("time to converge (last write → every copy on the last spec, Ready)", converged.Sub(lastWrite))
	l.count(ctx, t, f, r)
}

// stormSetUp places the RayService ns/name on all three members with a Rolling rollout and
// waits until every copy is Ready and the first rollout Complete. It returns each member's
// active RayCluster.
func stormSetUp(t *testing.T, f *localfleet.Fleet, ns, name string) map[string]string {
	t.Helper()
	cCreateNamespace(t, f, ns)
	cCreatePolicy(t, f, ns, "everywhere", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](3),
		Rollout: &fleetv1alpha1.RolloutStrategy{
			Type: fleetv1alpha1.RolloutRolling, SoakSeconds: ptr.To[int32](stormSoak),
			MaxUnavailableClusters: ptr.To(intstr.FromInt32(1)),
		},
	})
	rs := cSmallRayService(ns, name, "everywhere")
	if err := f.Hub.Client.Create(t.Context(), rs); err != nil {
		t.Fatalf("creating RayService %s/%s on the hub: %v", ns, name, err)
	}
	active := map[string]string{}
	eventually(t, timeout, func(g gomega.Gomega) {
		var hub rayv1.RayService
		g.Expect(f.Hub.Client.Get(context.Background(), client.ObjectKeyFromObject(rs), &hub)).To(gomega.Succeed())
		stormExpectConverged(g, f, ns, name, cSpecHash(&hub.Spec))
		for member, c := range f.Members {
			var m rayv1.RayService
			g.Expect(c.Client.Get(context.Background(), client.ObjectKeyFromObject(rs), &m)).To(gomega.Succeed())
			active[member] = m.Status.ActiveServiceStatus.RayClusterName
		}
	})
	return active
}

// stormExpectConverged checks that the fleet runs the hub spec whose hash is want: the
// binding records it and its rollout is Complete, the hub RayService is Ready, and every
// member's copy carries it, has observed it, is Ready and has no pending RayCluster.
func stormExpectConverged(g gomega.Gomega, f *localfleet.Fleet, ns, name, want string) {
	key := client.ObjectKey{Namespace: ns, Name: name}
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(f.Hub.Client.Get(context.Background(), key, &b)).To(gomega.Succeed())
	g.Expect(b.Spec.SpecHash).To(gomega.Equal(want), "the binding's specHash")
	g.Expect(b.Spec.Clusters).To(gomega.HaveLen(len(f.Members)), "the binding's clusters")
	g.Expect(b.Status.Rollout).NotTo(gomega.BeNil(), "the binding's rollout")
	g.Expect(b.Status.Rollout.Phase).To(gomega.Equal(fleetv1alpha1.RolloutComplete), "rollout phase: %s", b.Status.Rollout.Message)
	var hub rayv1.RayService
	g.Expect(f.Hub.Client.Get(context.Background(), key, &hub)).To(gomega.Succeed())
	g.Expect(cReady(&hub)).To(gomega.BeTrue(), "the hub RayService Ready")
	for member, c := range f.Members {
		var m rayv1.RayService
		g.Expect(c.Client.Get(context.Background(), key, &m)).To(gomega.Succeed(), "the copy on %s", member)
		g.Expect(m.Annotations[labels.SpecHash]).To(gomega.Equal(want), "the spec hash of the copy on %s", member)
		g.Expect(m.Status.ObservedGeneration).To(gomega.Equal(m.Generation), "the copy on %s observed its spec", member)
		g.Expect(cReady(&m)).To(gomega.BeTrue(), "the copy on %s Ready", member)
		g.Expect(m.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty(), "the pending RayCluster on %s", member)
	}
}

// stormWrites is what the writers did.
type stormWrites struct {
	mu sync.Mutex
	// written counts accepted patches; conflicts the attempts refused for a stale
	// resourceVersion (each retried).
	written, conflicts int
	// results are the hashes of the specs the accepted patches left.
	results map[string]bool
	// gaveUp is the first error a writer stopped on.
	gaveUp error
}

// stormRun runs the writers for d and returns what they did.
func stormRun(t *testing.T, f *localfleet.Fleet, ns, name string, d time.Duration) *stormWrites {
	t.Helper()
	var base rayv1.RayService
	if err := f.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &base); err != nil {
		t.Fatalf("reading the hub RayService: %v", err)
	}
	w := &stormWrites{results: map[string]bool{}}
	// The storm's end only stops new writes: a write under way finishes under the test's own
	// context, since a request cut by the end (the client's rate limiter refuses a wait that
	// would pass a deadline) is not a writer giving up.
	stop, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range stormWriters {
		// Each writer has its own num_replicas, 1 to stormWriters.
		serve := strings.Replace(base.Spec.ServeConfigV2, "num_replicas: 1", fmt.Sprintf("num_replicas: %d", i+1), 1)
		wg.Go(func() { w.writer(t.Context(), stop, f, ns, name, i, serve) })
	}
	wg.Wait()
	return w
}

// writer patches under ctx until stop ends: write n of writer i sets stormKey to "w<i>-<n>" and
// the Serve config to serve.
func (w *stormWrites) writer(ctx, stop context.Context, f *localfleet.Fleet, ns, name string, i int, serve string) {
	backoff := wait.Backoff{Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 1, Steps: 30, Cap: time.Second}
	for n := 0; stop.Err() == nil; n++ {
		err := retry.OnError(backoff, apierrors.IsConflict, func() error {
			var cur rayv1.RayService
			if err := f.Hub.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cur); err != nil {
				return err
			}
			patch, err := json.Marshal(map[string]any{
				"metadata": map[string]any{"resourceVersion": cur.ResourceVersion},
				"spec": map[string]any{
					"serveConfigV2": serve,
					"rayClusterConfig": map[string]any{"headGroupSpec": map[string]any{"template": map[string]any{
						"metadata": map[string]any{"annotations": map[string]string{stormKey: fmt.Sprintf("w%d-%d", i, n)}},
					}}},
				},
			})
			if err != nil {
				return err
			}
			err = f.Hub.Client.Patch(ctx, &cur, client.RawPatch(types.MergePatchType, patch))
			w.mu.Lock()
			defer w.mu.Unlock()
			switch {
			case apierrors.IsConflict(err):
				w.conflicts++
			case err == nil:
				w.written++
				w.results[cSpecHash(&cur.Spec)] = true
			}
			return err
		})
		if err != nil {
			if ctx.Err() == nil {
				w.mu.Lock()
				if w.gaveUp == nil {
					w.gaveUp = fmt.Errorf("writer %d, write %d: %w", i, n, err)
				}
				w.mu.Unlock()
			}
			return
		}
		select {
		case <-stop.Done():
		case <-time.After(stormPace + rand.N(stormPace)):
		}
	}
}

// stormRecord is what the watches saw during the storm.
type stormRecord struct {
	mu    sync.Mutex
	stops []func()
	// hub are the hashes of the hub RayService's specs.
	hub map[string]bool
	// copies are the states of the member copies: "member rv": annotation and spec hashes.
	copies []stormCopy
	// copyDeleted names a copy whose deletion a watch saw.
	copyDeleted string
	// last is each member copy's last state; midUpgrade lists the copies whose spec changed
	// while their previous state still had a pending RayCluster: a third revision on its way.
	last       map[string]stormCopy
	midUpgrade []string
	// clusters are each member's RayClusters of the RayService now, by name.
	clusters map[string]map[string]*rayv1.RayCluster
	// maxLive and maxAll are the most RayClusters each member had at once: live (neither
	// retired by the spoke nor being deleted), and all; atMax lists the live ones at the max.
	maxLive, maxAll map[string]int
	atMax           map[string]string
}

// stormCopy is one state of a member copy.
type stormCopy struct {
	member, resourceVersion, annotation, spec string
	// pending is the copy's pending RayCluster, "" when none.
	pending string
}

// stormWatch starts the watches of the hub RayService ns/name, its copies and the copies'
// RayClusters.
func stormWatch(t *testing.T, f *localfleet.Fleet, ns, name string) *stormRecord {
	t.Helper()
	rec := &stormRecord{hub: map[string]bool{}, last: map[string]stormCopy{}, clusters: map[string]map[string]*rayv1.RayCluster{},
		maxLive: map[string]int{}, maxAll: map[string]int{}, atMax: map[string]string{}}
	byName := []client.ListOption{client.MatchingFields{"metadata.name": name}}
	rec.stops = append(rec.stops, cWatch(t, "hub", f.Hub.Config, &rayv1.RayServiceList{}, ns, byName, func(ev cEvent) {
		if rs, ok := ev.Obj.(*rayv1.RayService); ok {
			rec.mu.Lock()
			rec.hub[cSpecHash(&rs.Spec)] = true
			rec.mu.Unlock()
		}
	}))
	for member, c := range f.Members {
		rec.stops = append(rec.stops,
			cWatch(t, member, c.Config, &rayv1.RayServiceList{}, ns, byName, rec.onCopy),
			cWatch(t, member, c.Config, &rayv1.RayClusterList{}, ns,
				[]client.ListOption{client.MatchingLabels{labels.OriginatedFromCRName: name}}, rec.onCluster))
	}
	return rec
}

// onCopy records a state of a member copy.
func (rec *stormRecord) onCopy(ev cEvent) {
	rs, ok := ev.Obj.(*rayv1.RayService)
	if !ok {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if ev.Type == watch.Deleted {
		rec.copyDeleted = ev.Source + " " + rs.Namespace + "/" + rs.Name
		return
	}
	c := stormCopy{member: ev.Source, resourceVersion: rs.ResourceVersion, annotation: rs.Annotations[labels.SpecHash],
		spec: cSpecHash(&rs.Spec), pending: rs.Status.PendingServiceStatus.RayClusterName}
	if prev, ok := rec.last[ev.Source]; ok && prev.pending != "" && prev.annotation != c.annotation {
		rec.midUpgrade = append(rec.midUpgrade, fmt.Sprintf("%s at resourceVersion %s: spec %.12s applied while RayCluster %s was pending for spec %.12s",
			ev.Source, c.resourceVersion, c.annotation, prev.pending, prev.annotation))
	}
	rec.last[ev.Source] = c
	rec.copies = append(rec.copies, c)
}

// onCluster keeps a member's RayClusters of the RayService and the most it had at once.
func (rec *stormRecord) onCluster(ev cEvent) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if ev.Type == "" || rec.clusters[ev.Source] == nil {
		rec.clusters[ev.Source] = map[string]*rayv1.RayCluster{}
	}
	rc, ok := ev.Obj.(*rayv1.RayCluster)
	if !ok {
		return
	}
	if ev.Type == watch.Deleted {
		delete(rec.clusters[ev.Source], rc.Name)
		return
	}
	rec.clusters[ev.Source][rc.Name] = rc
	var live []string
	for n, c := range rec.clusters[ev.Source] {
		if c.DeletionTimestamp.IsZero() && c.Annotations[labels.DeleteAfter] == "" {
			live = append(live, n)
		}
	}
	rec.maxAll[ev.Source] = max(rec.maxAll[ev.Source], len(rec.clusters[ev.Source]))
	if len(live) > rec.maxLive[ev.Source] {
		rec.maxLive[ev.Source] = len(live)
		slices.Sort(live)
		rec.atMax[ev.Source] = strings.Join(live, ", ")
	}
}

// stop ends the watches.
func (rec *stormRecord) stop() {
	for _, s := range rec.stops {
		s()
	}
}

// hubSpecs returns the hashes of the hub RayService's specs the watch saw.
func (rec *stormRecord) hubSpecs() map[string]bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return maps.Clone(rec.hub)
}

// copySpecs returns the distinct specs the copies carried, and the copy states whose spec or
// spec-hash annotation is not one of hub's.
func (rec *stormRecord) copySpecs(hub map[string]bool) (seen map[string]bool, foreign []string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen = map[string]bool{}
	for _, c := range rec.copies {
		seen[c.spec] = true
		if !hub[c.spec] || !hub[c.annotation] {
			foreign = append(foreign, fmt.Sprintf("%s at resourceVersion %s: spec %.12s, annotation %.12s",
				c.member, c.resourceVersion, c.spec, c.annotation))
		}
	}
	return seen, foreign
}

// maxOf renders per-member maxima, members sorted.
func (rec *stormRecord) maxOf(m map[string]int) string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	parts := make([]string, 0, len(m))
	for _, member := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", member, m[member]))
	}
	return strings.Join(parts, ", ")
}
