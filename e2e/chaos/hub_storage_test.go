//go:build e2e

package chaos

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// The hub storage scenario's settings.
const (
	// storageFaultShare is the share of the copies that exist when the hub's API server is
	// stopped: placement is under way, far from done.
	storageFaultShare = 4 // a quarter
	// storagePlaced bounds the wait for every RayService to be placed after the restart.
	storagePlaced = 10 * time.Minute
	// storageHold is how long the placed fleet is watched for a late extra or re-created copy.
	storageHold = 10 * time.Second
)

// Scenario 7: span(500, 100) small RayServices are created on the hub, alternately under a
// policy asking for one cluster and one asking for two (spread by region); once a quarter of
// the copies exist, the hub's kube-apiserver is stopped for span(30s, 15s) and started again
// (bin/hub keeps running, or is restarted as a supervisor would if it exited). Watches on
// every member record each copy's UID when first seen. Every RayService must end placed on as
// many clusters as its policy asks, no copy may ever be re-created (a second UID) or deleted,
// and no member may hold a copy its binding does not name (copies in all = the sum of asks).
func TestHubAPIServerRestartMidPlacement(t *testing.T) {
	services := 500
	if !full() {
		services = 100
	}
	down := span(30*time.Second, 15*time.Second)
	r := scenario(t, 7, "hub storage pressure",
		fmt.Sprintf("%d RayServices created (half asking 1 cluster, half 2 spread by region); the hub's kube-apiserver stopped for %v once a quarter of the copies existed, then started again",
			services, down),
		"every RayService placed on as many clusters as its policy asks; no copy re-created (one UID per copy, from member watches) or deleted; "+
			"no copy its binding does not name (copies = sum of asks); nothing lost (ledger)")
	f := startFleet(t, func(o *localfleet.Options) {
		// Debug logs of hundreds of RayServices would slow the hub down for nothing.
		o.LogLevel = "info"
	})
	ctx := t.Context()
	const ns = "storage"
	objs, asks, total := storageSetUp(t, f, ns, services)
	u := storageWatchCopies(t, f, ns)

	began := time.Now()
	type creation struct {
		retried int
		err     error
	}
	created := make(chan creation, 1)
	go func() {
		retried, err := cCreateAll(ctx, f, objs, 8)
		created <- creation{retried, err}
	}()
	atFault := storageAwaitCopies(t, u, total/storageFaultShare)
	if atFault >= total {
		t.Fatalf("every copy existed before the fault (%d of %d): the API server was not stopped mid-placement", atFault, total)
	}
	l := snapshot(ctx, t, f)
	stopped := time.Now()
	if err := f.StopHubAPIServer(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
		t.Fatal("the test ended during the outage")
	case <-time.After(down):
	}
	exitedDuring := f.HubExits()
	restarted, err := f.StartHubAPIServer(ctx)
	if err != nil {
		t.Fatalf("starting the hub's API server again: %v", err)
	}
	back := time.Now()
	c := <-created
	if c.err != nil {
		t.Fatal(c.err)
	}

	eventually(t, storagePlaced, func(g gomega.Gomega) { storageExpectPlaced(g, f, ns, asks, total) })
	placed := time.Now()
	consistently(t, storageHold, func(g gomega.Gomega) { storageExpectPlaced(g, f, ns, asks, total) })
	u.stop()
	recreated, deleted, seen := u.result()
	for _, s := range recreated {
		t.Errorf("copy re-created: %s", s)
	}
	for _, s := range deleted {
		t.Errorf("copy deleted: %s", s)
	}
	if err := f.Exited(); err != nil {
		t.Errorf("an agent exited: %v", err)
	}

	r.Add("copies when the API server stopped", fmt.Sprintf("%d of %d", atFault, total))
	r.Add("API server down time (stop → serving again)", back.Sub(stopped))
	r.Add("bin/hub", storageHubFate(exitedDuring, restarted))
	r.Add("creates retried during the outage", c.retried)
	r.Add("time to all placed (first create → every binding and copy as asked)", placed.Sub(began))
	r.Add("API server back → all placed", placed.Sub(back))
	r.Add("copies", fmt.Sprintf("%d (sum of asks %d; %d seen by the member watches)", total, total, seen))
	r.Add("re-created", len(recreated))
	r.Add("deleted", len(deleted))
	r.Add("extra", 0) // storageExpectPlaced held: no member holds a copy its binding does not name
	l.count(ctx, t, f, r)
}

// storageHubFate says what became of bin/hub during the outage.
func storageHubFate(exited, restarted int) string {
	if exited == 0 && restarted == 0 {
		return "kept running through the outage"
	}
	return fmt.Sprintf("exited during the outage (%d replica(s)), restarted %d time(s) as a supervisor would", exited, restarted)
}

// storageSetUp creates ns and the two policies, and returns the RayServices to create (not
// created yet), how many clusters each asks for, and the sum.
func storageSetUp(t *testing.T, f *localfleet.Fleet, ns string, services int) ([]client.Object, map[string]int, int) {
	t.Helper()
	cCreateNamespace(t, f, ns)
	cCreatePolicy(t, f, ns, "one", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](1)})
	cCreatePolicy(t, f, ns, "two", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), SpreadBy: regionKey})
	objs := make([]client.Object, services)
	asks := map[string]int{}
	total := 0
	for i := range objs {
		name, policy, ask := fmt.Sprintf("svc-%03d", i), "one", 1
		if i%2 == 1 {
			policy, ask = "two", 2
		}
		objs[i] = cSmallRayService(ns, name, policy)
		asks[name] = ask
		total += ask
	}
	return objs, asks, total
}

// storageAwaitCopies waits until the member watches have seen n copies and returns how many
// they had seen then. It looks often: placement is quick, and the fault must hit it midway.
func storageAwaitCopies(t *testing.T, u *storageUIDs, n int) int {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		if _, _, seen := u.result(); seen >= n {
			return seen
		}
		select {
		case <-t.Context().Done():
			t.Fatal("the test ended before placement began")
		case <-deadline:
			t.Fatalf("the members did not get %d copies within %v", n, timeout)
		case <-tick.C:
		}
	}
}

// storageExpectPlaced checks that every RayService in ns is placed as asked: its binding's
// Placed is True and names ask clusters, each of which holds its copy; no member holds a copy
// its binding does not name; the copies sum to total.
func storageExpectPlaced(g gomega.Gomega, f *localfleet.Fleet, ns string, asks map[string]int, total int) {
	var bindings fleetv1alpha1.RayServiceBindingList
	g.Expect(f.Hub.Client.List(context.Background(), &bindings, client.InNamespace(ns))).To(gomega.Succeed())
	named := map[string][]string{}
	for _, b := range bindings.Items {
		named[b.Name] = b.Spec.Clusters
		g.Expect(b.Spec.Clusters).To(gomega.HaveLen(asks[b.Name]), "clusters of %s", b.Name)
		g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)).To(gomega.BeTrue(), "%s Placed", b.Name)
	}
	g.Expect(named).To(gomega.HaveLen(len(asks)), "bindings")
	copies := 0
	holders := map[string][]string{}
	for _, member := range slices.Sorted(maps.Keys(f.Members)) {
		var list rayv1.RayServiceList
		g.Expect(f.Members[member].Client.List(context.Background(), &list, client.InNamespace(ns))).To(gomega.Succeed())
		for _, rs := range list.Items {
			copies++
			g.Expect(named[rs.Name]).To(gomega.ContainElement(member), "%s holds a copy of %s, which its binding does not name", member, rs.Name)
			holders[rs.Name] = append(holders[rs.Name], member)
		}
	}
	for name, clusters := range named {
		g.Expect(holders[name]).To(gomega.ConsistOf(clusters), "members holding a copy of %s", name)
	}
	g.Expect(copies).To(gomega.Equal(total), "copies in all")
}

// storageUIDs is what the member watches saw of the copies: each one's first UID, and the
// copies that came back with another UID or were deleted.
type storageUIDs struct {
	stops     []func()
	mu        sync.Mutex
	first     map[string]types.UID
	recreated []string
	deleted   []string
}

// storageWatchCopies watches the RayServices in ns on every member.
func storageWatchCopies(t *testing.T, f *localfleet.Fleet, ns string) *storageUIDs {
	t.Helper()
	u := &storageUIDs{first: map[string]types.UID{}}
	for member, c := range f.Members {
		u.stops = append(u.stops, cWatch(t, member, c.Config, &rayv1.RayServiceList{}, ns, nil, u.on))
	}
	return u
}

// on records one event of a member copy.
func (u *storageUIDs) on(ev cEvent) {
	rs, ok := ev.Obj.(*rayv1.RayService)
	if !ok {
		return
	}
	key := ev.Source + "/" + rs.Namespace + "/" + rs.Name
	u.mu.Lock()
	defer u.mu.Unlock()
	first, known := u.first[key]
	switch {
	case ev.Type == watch.Deleted:
		u.deleted = append(u.deleted, fmt.Sprintf("%s (UID %s)", key, rs.UID))
	case !known:
		u.first[key] = rs.UID
	case first != rs.UID:
		u.recreated = append(u.recreated, fmt.Sprintf("%s: UID %s, first seen as %s", key, rs.UID, first))
	}
}

// stop ends the watches.
func (u *storageUIDs) stop() {
	for _, s := range u.stops {
		s()
	}
}

// result returns the re-created and deleted copies, and how many copies were seen.
func (u *storageUIDs) result() (recreated, deleted []string, seen int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.recreated), slices.Clone(u.deleted), len(u.first)
}
