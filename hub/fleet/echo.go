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
// writer's drift) is news and reconciles as before. Placing 10,000 RayServices made a second
// reconcile of every RayService that read every member and wrote nothing; these echoes caused
// it together with the binding's creation (see SetupWithManager).
type ownWrites struct {
	mu sync.Mutex
	rv map[copyKey]string
}

// copyKey is a copy on one member.
type copyKey struct {
	cluster string
	key     types.NamespacedName
}

// newOwnWrites returns a record of no write.
func newOwnWrites() *ownWrites {
	return &ownWrites{rv: map[copyKey]string{}}
}

// record notes that the hub's write of obj on cluster was stored as obj's resourceVersion.
func (w *ownWrites) record(cluster string, obj client.Object) {
	if obj.GetResourceVersion() == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.rv[copyKey{cluster: cluster, key: client.ObjectKeyFromObject(obj)}] = obj.GetResourceVersion()
}

// echo reports whether obj, as a watch on cluster saw it, is the version the hub's last write
// stored; that write is then forgotten, so each echo is recognised once. A watch event that
// arrives before the write's answer is recorded is not recognised: it costs a reconcile, as
// before.
func (w *ownWrites) echo(cluster string, obj client.Object) bool {
	k := copyKey{cluster: cluster, key: client.ObjectKeyFromObject(obj)}
	w.mu.Lock()
	defer w.mu.Unlock()
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
