// Package cachememo remembers the spoke's own recent writes until its informer cache shows
// them. A reconcile that runs between a write and that write's watch event reads the object
// as it was before; without a memory it would write the same thing again (a second label patch
// and event, a 409 on an optimistically locked patch) or, worse, decide from the stale status
// (name a second pending cluster, repeat a traffic step, write an older status back).
// A leaf: it imports no other RayFleet package, so never hub/ or shared/testing.
package cachememo

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Statuses remembers the status last written to each object of one kind (S is its status
// type) until the cache shows it. The spoke is the only writer of these statuses, so the
// remembered one is what the API server holds.
type Statuses[S any] struct {
	deepCopy func(*S) *S
	mu       sync.Mutex
	written  map[types.NamespacedName]writtenStatus[S]
}

// writtenStatus is a status written to the object with the given UID (an object recreated
// under the same name is another object).
type writtenStatus[S any] struct {
	uid    types.UID
	status *S
}

// NewStatuses returns an empty memory; deepCopy is the status type's DeepCopy.
func NewStatuses[S any](deepCopy func(*S) *S) *Statuses[S] {
	return &Statuses[S]{deepCopy: deepCopy, written: map[types.NamespacedName]writtenStatus[S]{}}
}

// Remember records status as just written to obj.
func (m *Statuses[S]) Remember(obj metav1.Object, status *S) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.written[keyOf(obj)] = writtenStatus[S]{uid: obj.GetUID(), status: m.deepCopy(status)}
}

// Apply overwrites status, read from the cache with obj, with the remembered one while the
// cache has not caught up; once it has (or obj is another object of the same name), the
// memory is dropped.
func (m *Statuses[S]) Apply(obj metav1.Object, status *S) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := keyOf(obj)
	w, ok := m.written[key]
	if !ok {
		return
	}
	if w.uid != obj.GetUID() || equality.Semantic.DeepEqual(*w.status, *status) {
		delete(m.written, key)
		return
	}
	*status = *m.deepCopy(w.status)
}

// Forget drops what is remembered of a deleted object.
func (m *Statuses[S]) Forget(key types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.written, key)
}

func keyOf(obj metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// CacheLag bounds how long Writes trusts a write over a cache that does not show it yet. The
// informer normally catches up within milliseconds; past this, the cache is believed again,
// so a value someone else changed meanwhile is not ignored for good.
const CacheLag = 10 * time.Second

// sweepAt is the size at which Note drops expired entries: keys of deleted objects are never
// asked for again.
const sweepAt = 256

// Writes remembers small writes (a label value, a finalizer) for CacheLag.
type Writes struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	written map[string]writeEntry
}

type writeEntry struct {
	value string
	at    time.Time
}

// NewWrites returns an empty memory on clk.
func NewWrites(clk clock.PassiveClock) *Writes {
	return &Writes{clock: clk, written: map[string]writeEntry{}}
}

// Note records that value was just written under key.
func (m *Writes) Note(key, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	if len(m.written) >= sweepAt {
		for k, e := range m.written {
			if now.Sub(e.at) >= CacheLag {
				delete(m.written, k)
			}
		}
	}
	m.written[key] = writeEntry{value: value, at: now}
}

// Recent reports whether value was written under key less than CacheLag ago.
func (m *Writes) Recent(key, value string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.written[key]
	if !ok {
		return false
	}
	if m.clock.Since(e.at) >= CacheLag {
		delete(m.written, key)
		return false
	}
	return e.value == value
}
