package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
	"github.com/rayfleet/rayfleet/e2e/bench/hub/simmembers"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// simCopies records the member copies of the scale benchmark's RayServices as they appear on
// the backing member server: which members hold each, their generations, and when each hub
// RayService had all the copies its policy asks for.
type simCopies struct {
	members []string
	mu      sync.Mutex
	// want is how many copies each RayService's policy asks for; gpu whether it asks for GPUs.
	want map[string]int
	gpu  map[string]bool
	// at is, by RayService, the members holding a copy and its generation.
	at     map[string]map[string]int64
	placed *benchutil.Readiness
}

func newSimCopies(members []string, services int) *simCopies {
	c := &simCopies{
		members: members, want: map[string]int{}, gpu: map[string]bool{},
		at: map[string]map[string]int64{}, placed: benchutil.NewReadiness(services),
	}
	for i := range services {
		p := policyOf(i)
		c.want[serviceName(i)] = p.copiesOn(len(members))
		c.gpu[serviceName(i)] = p.gpu
	}
	return c
}

// observe records a copy seen on the backing server (namespace ns), or its deletion.
func (c *simCopies) observe(ns, name string, generation int64, deleted bool, now time.Time) {
	member, own, ok := simmembers.MemberOf(c.members, ns)
	if !ok || own != benchNamespace {
		return
	}
	c.mu.Lock()
	if deleted {
		delete(c.at[name], member)
		c.mu.Unlock()
		return
	}
	if c.at[name] == nil {
		c.at[name] = map[string]int64{}
	}
	c.at[name][member] = generation
	complete := len(c.at[name]) >= c.want[name] && c.want[name] > 0
	c.mu.Unlock()
	if complete {
		c.placed.MarkReady(name, now)
	}
}

// held sums what the copies on each member take off its free capacity.
func (c *simCopies) held() map[string]corev1.ResourceList {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]corev1.ResourceList{}
	for name, at := range c.at {
		d := copyDemand(c.gpu[name])
		for member := range at {
			sum := out[member]
			if sum == nil {
				sum = corev1.ResourceList{}
				out[member] = sum
			}
			for k, q := range d {
				s := sum[k]
				s.Add(q)
				sum[k] = s
			}
		}
	}
	return out
}

// spread returns the fewest and the most copies on any member, and the total.
func (c *simCopies) spread() (fewest, most, total int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	per := map[string]int{}
	for _, at := range c.at {
		for member := range at {
			per[member]++
			total++
		}
	}
	fewest = -1
	for _, m := range c.members {
		n := per[m]
		if fewest < 0 || n < fewest {
			fewest = n
		}
		most = max(most, n)
	}
	return max(fewest, 0), most, total
}

// simChange is one member status change of the stream: copy of RayService name on member.
type simChange struct {
	name, member string
	generation   int64
}

// changes lists a status change for every copy, n at most (0: all): the first copy of every
// RayService, then the second of those with two or more, and so on, so that the changes on
// one RayService are far apart.
func (c *simCopies) changes(services, n int) []simChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rounds [][]simChange
	for i := range services {
		name := serviceName(i)
		members := make([]string, 0, len(c.at[name]))
		for m := range c.at[name] {
			members = append(members, m)
		}
		slices.Sort(members)
		for k, m := range members {
			if k == len(rounds) {
				rounds = append(rounds, nil)
			}
			rounds[k] = append(rounds[k], simChange{name: name, member: m, generation: c.at[name][m]})
		}
	}
	out := slices.Concat(rounds...)
	if n > 0 && n < len(out) {
		out = out[:n]
	}
	return out
}

// endpoints records, per hub RayService, when the k-th of its copies was turned Ready and when
// the hub RayService first counted k serve endpoints: one copy turned Ready adds one endpoint
// to the hub's sum, whichever copy it was.
type endpoints struct {
	mu   sync.Mutex
	sent map[string][]time.Time
	seen map[string]int
	lat  []time.Duration
	want int
	done chan struct{}
}

func newEndpoints(want int) *endpoints {
	return &endpoints{sent: map[string][]time.Time{}, seen: map[string]int{}, want: want, done: make(chan struct{})}
}

// changed records that another copy of name is being turned Ready now.
func (e *endpoints) changed(name string, at time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sent[name] = append(e.sent[name], at)
}

// observe records that the hub RayService name counts n serve endpoints at now.
func (e *endpoints) observe(name string, n int, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	sent := e.sent[name]
	for k := e.seen[name]; k < min(n, len(sent)); k++ {
		e.lat = append(e.lat, now.Sub(sent[k]))
		e.seen[name] = k + 1
		if len(e.lat) == e.want {
			close(e.done)
		}
	}
}

// latencies returns the change-to-hub latencies seen so far, sorted.
func (e *endpoints) latencies() []time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := slices.Clone(e.lat)
	benchutil.SortDurations(out)
	return out
}

// count is how many changes the hub has shown.
func (e *endpoints) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.lat)
}

// informAll starts an informer on every RayService of c (all namespaces) calling observe for
// every add, update and delete; it returns once the informer has synced.
func informAll(ctx context.Context, c *localcluster.Cluster, namespaces map[string]cache.Config,
	observe func(rs *rayv1.RayService, deleted bool)) error {
	ca, err := cache.New(c.Config, cache.Options{Scheme: localcluster.Scheme, DefaultNamespaces: namespaces})
	if err != nil {
		return fmt.Errorf("creating RayService cache on %s: %w", c.Name, err)
	}
	inf, err := ca.GetInformer(ctx, &rayv1.RayService{})
	if err != nil {
		return fmt.Errorf("getting RayService informer on %s: %w", c.Name, err)
	}
	handle := func(obj any, deleted bool) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if rs, ok := obj.(*rayv1.RayService); ok {
			observe(rs, deleted)
		}
	}
	if _, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { handle(obj, false) },
		UpdateFunc: func(_, obj any) { handle(obj, false) },
		DeleteFunc: func(obj any) { handle(obj, true) },
	}); err != nil {
		return fmt.Errorf("watching RayServices on %s: %w", c.Name, err)
	}
	go func() { _ = ca.Start(ctx) }()
	if !ca.WaitForCacheSync(ctx) {
		return fmt.Errorf("RayService cache on %s did not sync", c.Name)
	}
	return nil
}
