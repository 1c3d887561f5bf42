package rayservice

import (
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
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

// cacheLag bounds how long a write is trusted over a cache that does not show it yet. The
// informer normally catches up within milliseconds; past this, the cache is believed again,
// so a value someone else changed meanwhile is not ignored for good.
const cacheLag = 10 * time.Second

// writeMemo remembers small writes (a label value, a finalizer) for cacheLag. A reconcile
// that runs before the watch event of its previous write would otherwise repeat the write:
// an extra patch and event for a label, a 409 for the finalizer's optimistically locked patch.
type writeMemo struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	written map[string]memoEntry
}

type memoEntry struct {
	value string
	at    time.Time
}

func newWriteMemo(clk clock.PassiveClock) *writeMemo {
	return &writeMemo{clock: clk, written: map[string]memoEntry{}}
}

// note records that value was just written under key.
func (m *writeMemo) note(key, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if len(m.written) >= sweepAt {
		// Keys of deleted Pods and RayServices are never asked for again; drop what expired.
		for k, e := range m.written {
			if now.Sub(e.at) >= cacheLag {
				delete(m.written, k)
			}
		}
	}
	m.written[key] = memoEntry{value: value, at: now}
}

// sweepAt is the size at which note drops expired entries.
const sweepAt = 256

// recent reports whether value was written under key less than cacheLag ago. Expired entries
// are dropped on the way.
func (m *writeMemo) recent(key, value string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.written[key]
	if !ok {
		return false
	}
	if m.clock.Since(e.at) >= cacheLag {
		delete(m.written, key)
		return false
	}
	return e.value == value
}
