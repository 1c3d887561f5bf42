package fleet

// Phase: read (memory). Which members' caches hold a RayService under each key, so that a
// reconcile reads only those.

import (
	"context"
	"sync"
	"sync/atomic"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
)

// holders indexes every engaged member's RayService cache by key: each object there, the hub's
// copies and anyone else's alike. Every reconcile accounts for every member, and reading each
// member's cache, at 100 members 98 answers of "not found" (an allocated error each), costs a
// tenth of the hub's CPU; the index answers those with a map lookup. It is kept by a handler
// on the very informer the member's cached client reads, so it trails that cache by one event
// dispatch, as the cache trails the member's API server. Until the handler has seen the
// cache's initial list, the member is read as before (may answers true).
type holders struct {
	mu sync.RWMutex
	// members are the indexed members by name; a member engaged again gets a new entry.
	members map[string]*memberIndex
}

// memberIndex is one member's index.
type memberIndex struct {
	// synced reports whether the handler has seen the cache's initial list; complete
	// remembers that it did, which stays true (asking takes the informer's lock).
	synced   func() bool
	complete atomic.Bool
	keys     map[types.NamespacedName]struct{}
}

// newHolders returns an index of no member.
func newHolders() *holders {
	return &holders{members: map[string]*memberIndex{}}
}

// may reports, for each of members, whether its cache may hold a RayService under key: false
// only when the member's index is complete and has none there. A nil index knows nothing.
func (h *holders) may(key types.NamespacedName, members []string) []bool {
	out := make([]bool, len(members))
	if h == nil {
		for i := range out {
			out[i] = true
		}
		return out
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	for i, name := range members {
		m := h.members[name]
		if m == nil || !m.isComplete() {
			out[i] = true
			continue
		}
		_, out[i] = m.keys[key]
	}
	return out
}

// isComplete reports whether the index has seen the cache's initial list.
func (m *memberIndex) isComplete() bool {
	if m.complete.Load() {
		return true
	}
	if m.synced() {
		m.complete.Store(true)
		return true
	}
	return false
}

// Engage indexes the RayServices of a member that engages; the entry goes when ctx ends (the
// member disengaged). It implements multicluster.Aware.
func (h *holders) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	// A member the index cannot follow is read through its cache, as before: the index is no
	// reason to refuse a member. Not blocking: the member's cache may not have started yet.
	log := ctrl.LoggerFrom(ctx).WithValues("cluster", name)
	inf, err := cl.GetCache().GetInformer(ctx, &rayv1.RayService{}, cache.BlockUntilSynced(false))
	if err != nil {
		log.Error(err, "The copy index cannot follow the member's RayServices; each reconcile reads its cache")
		return nil
	}
	m := &memberIndex{keys: map[types.NamespacedName]struct{}{}}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.note(m, obj, true) },
		UpdateFunc: func(_, obj any) { h.note(m, obj, true) },
		DeleteFunc: func(obj any) { h.note(m, obj, false) },
	})
	if err != nil {
		log.Error(err, "The copy index cannot follow the member's RayServices; each reconcile reads its cache")
		return nil
	}
	m.synced = reg.HasSynced
	h.mu.Lock()
	h.members[string(name)] = m
	h.mu.Unlock()
	go func() {
		<-ctx.Done()
		if err := inf.RemoveEventHandler(reg); err != nil {
			log.V(1).Info("Removing the copy index's handler failed", "reason", err.Error())
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.members[string(name)] == m {
			delete(h.members, string(name))
		}
	}()
	return nil
}

// Start implements manager.Runnable: the index lives with the manager.
func (h *holders) Start(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

// note records obj present (or gone) in m.
func (h *holders) note(m *memberIndex, obj any, present bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	o, ok := obj.(client.Object)
	if !ok {
		return
	}
	key := client.ObjectKeyFromObject(o)
	h.mu.Lock()
	defer h.mu.Unlock()
	if present {
		m.keys[key] = struct{}{}
	} else {
		delete(m.keys, key)
	}
}
