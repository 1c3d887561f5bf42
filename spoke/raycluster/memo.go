package raycluster

import (
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// statusMemo remembers the status last written to each RayCluster until the informer cache
// shows it. Without it, a reconcile that runs between a status write and the watch event of
// that write compares its new status with the stale cached one, sees no change, writes
// nothing, and leaves the API server with the older status until the next resync.
type statusMemo struct {
	mu      sync.Mutex
	written map[types.NamespacedName]writtenStatus
}

// writtenStatus is a status written to the RayCluster with the given UID (a RayCluster
// recreated under the same name is another object).
type writtenStatus struct {
	uid    types.UID
	status rayv1.RayClusterStatus
}

func newStatusMemo() *statusMemo {
	return &statusMemo{written: map[types.NamespacedName]writtenStatus{}}
}

// remember records the status just written to rc.
func (m *statusMemo) remember(rc *rayv1.RayCluster) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name}
	m.written[key] = writtenStatus{uid: rc.UID, status: *rc.Status.DeepCopy()}
}

// apply puts the remembered status on a RayCluster read from the cache while the cache has
// not caught up with it; once it has, the memory is dropped. The spoke is the only writer of
// the status, so the remembered one is what the API server holds.
func (m *statusMemo) apply(rc *rayv1.RayCluster) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: rc.Namespace, Name: rc.Name}
	w, ok := m.written[key]
	if !ok {
		return
	}
	if w.uid != rc.UID || equality.Semantic.DeepEqual(w.status, rc.Status) {
		delete(m.written, key)
		return
	}
	rc.Status = *w.status.DeepCopy()
}

// forget drops what is remembered of a deleted RayCluster.
func (m *statusMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.written, key)
}
