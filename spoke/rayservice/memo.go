package rayservice

import (
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
)

// statusMemo remembers the status last written to each RayService until the informer cache
// shows it. Without it, a reconcile that runs between a status write and that write's watch
// event starts from the stale cached status: it would name a second pending cluster, repeat
// a traffic step or a target_capacity change, or write the older status back.
type statusMemo struct {
	mu      sync.Mutex
	written map[types.NamespacedName]writtenStatus
}

// writtenStatus is a status written to the RayService with the given UID (a RayService
// recreated under the same name is another object).
type writtenStatus struct {
	uid    types.UID
	status rayv1.RayServiceStatuses
}

func newStatusMemo() *statusMemo {
	return &statusMemo{written: map[types.NamespacedName]writtenStatus{}}
}

// remember records the status just written to rs.
func (m *statusMemo) remember(rs *rayv1.RayService) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	m.written[key] = writtenStatus{uid: rs.UID, status: *rs.Status.DeepCopy()}
}

// apply puts the remembered status on a RayService read from the cache while the cache has
// not caught up with it; once it has, the memory is dropped. The spoke is the only writer of
// the status, so the remembered one is what the API server holds.
func (m *statusMemo) apply(rs *rayv1.RayService) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	w, ok := m.written[key]
	if !ok {
		return
	}
	if w.uid != rs.UID || equality.Semantic.DeepEqual(w.status, rs.Status) {
		delete(m.written, key)
		return
	}
	rs.Status = *w.status.DeepCopy()
}

// forget drops what is remembered of a deleted RayService.
func (m *statusMemo) forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.written, key)
}
