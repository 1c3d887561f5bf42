package fleet

// Phase: execute (memory). The copies the hub wrote, so their watch events queue nothing.

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ownWrites remembers, for each copy the hub applied, the resourceVersion the member's API
// server answered with. The watch event of that very version is the hub's own write coming
// back: the reconcile that wrote it has already taken the copy as stored into its status, so
// the event needs no reconcile of its own. Any later version (the spoke's status, another
// writer's drift) is news and reconciles as before. An event that arrives while the write
// still awaits its answer (a quarter of the copies' creations under load) waits for it, and
// is judged then.
type ownWrites struct {
	mu sync.Mutex
	rv map[copyKey]string
	// writing holds the copies whose write awaits its answer, each with the last watch event
	// of it that arrived meanwhile (nil if none).
	writing map[copyKey]*early
}

// early is a watch event of a copy that arrived before the answer to the hub's write of it;
// queue reconciles its hub RayService.
type early struct {
	rv    string
	queue func()
}

// copyKey is a copy on one member.
type copyKey struct {
	cluster string
	key     types.NamespacedName
}

// newOwnWrites returns a record of no write.
func newOwnWrites() *ownWrites {
	return &ownWrites{rv: map[copyKey]string{}, writing: map[copyKey]*early{}}
}

// start notes that the hub is writing the copy key on cluster; done must follow.
func (w *ownWrites) start(cluster string, key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing[copyKey{cluster: cluster, key: key}] = nil
}

// done ends the write of key on cluster that start began: rv is the resourceVersion the
// write stored, "" when it failed. The event that waited for the answer is queued unless it
// was the write's own; when it was not, it is later news (or earlier news the answer
// includes, which cannot be told apart).
func (w *ownWrites) done(cluster string, key types.NamespacedName, rv string) {
	k := copyKey{cluster: cluster, key: key}
	w.mu.Lock()
	e := w.writing[k]
	delete(w.writing, k)
	echoed := e != nil && rv != "" && e.rv == rv
	if rv != "" && !echoed {
		w.rv[k] = rv
	}
	w.mu.Unlock()
	if e != nil && !echoed {
		e.queue()
	}
}

// echo reports whether obj, as a watch on cluster saw it, needs no reconcile now: it is the
// version the hub's last write stored (that write is then forgotten, so each echo is
// recognised once), or it arrived while a write of it awaits its answer and waits for done,
// which calls queue if it was news.
func (w *ownWrites) echo(cluster string, obj client.Object, queue func()) bool {
	k := copyKey{cluster: cluster, key: client.ObjectKeyFromObject(obj)}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, writing := w.writing[k]; writing {
		w.writing[k] = &early{rv: obj.GetResourceVersion(), queue: queue}
		return true
	}
	rv, ok := w.rv[k]
	if !ok || rv != obj.GetResourceVersion() {
		return false
	}
	delete(w.rv, k)
	return true
}

// forget drops what is remembered of the copy obj on cluster (it is gone).
func (w *ownWrites) forget(cluster string, obj client.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, copyKey{cluster: cluster, key: client.ObjectKeyFromObject(obj)})
}

// forgetCluster drops what is remembered of cluster's copies (it left the fleet).
func (w *ownWrites) forgetCluster(cluster string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range w.rv {
		if k.cluster == cluster {
			delete(w.rv, k)
		}
	}
}
