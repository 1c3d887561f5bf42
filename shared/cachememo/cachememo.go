// Package cachememo remembers a controller's own recent writes until its informer cache shows
// them. A reconcile that runs between a write and that write's watch event reads the object
// as it was before; without a memory it would write the same thing again (a second label patch
// and event, a 409 on an optimistically locked patch) or, worse, decide from the stale status
// (name a second pending cluster, repeat a traffic step, restart a rollout's step, write an
// older status back). The spoke keeps its RayClusters' and RayServices' statuses here, the hub
// its bindings' (the rollout's state).
// A leaf: it imports no other RayFleet package, so never hub/, spoke/ or shared/testing.
package cachememo

import (
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Statuses remembers the status last written to each object of one kind (S is its status
// type) until the cache shows it, for at most CacheLag. Its controller must be the only
// writer of these statuses, so that the remembered one is what the API server holds.
type Statuses[S any] struct {
	clock    clock.PassiveClock
	deepCopy func(*S) *S
	mu       sync.Mutex
	written  map[types.NamespacedName]writtenStatus[S]
	// nextSweep is the size at which Remember sweeps next.
	nextSweep int
}

// writtenStatus is a status written at a time to the object with the given UID (an object
// recreated under the same name is another object).
type writtenStatus[S any] struct {
	uid    types.UID
	status *S
	at     time.Time
}

// NewStatuses returns an empty memory on clk; deepCopy is the status type's DeepCopy.
func NewStatuses[S any](clk clock.PassiveClock, deepCopy func(*S) *S) *Statuses[S] {
	return &Statuses[S]{clock: clk, deepCopy: deepCopy, written: map[types.NamespacedName]writtenStatus[S]{}}
}

// Remember records status as just written to obj. Objects that are not reconciled again soon
// after a write (nothing else changed) would keep their entry for good: entries older than
// CacheLag are dropped as the memory grows.
func (m *Statuses[S]) Remember(obj metav1.Object, status *S) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock.Now()
	sweep(m.written, &m.nextSweep, now, func(w writtenStatus[S]) time.Time { return w.at })
	m.written[keyOf(obj)] = writtenStatus[S]{uid: obj.GetUID(), status: m.deepCopy(status), at: now}
}

// Apply overwrites status, read from the cache with obj, with the remembered one while the
// cache has not caught up; once it has (or obj is another object of the same name, or the
// write is CacheLag old), the memory is dropped.
func (m *Statuses[S]) Apply(obj metav1.Object, status *S) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := keyOf(obj)
	w, ok := m.written[key]
	if !ok {
		return
	}
	if w.uid != obj.GetUID() || m.clock.Since(w.at) >= CacheLag || equality.Semantic.DeepEqual(*w.status, *status) {
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

// CacheLag bounds how long Writes and Statuses trust a write over a cache that does not show
// it yet. The informer normally catches up within milliseconds; past this, the cache is
// believed again, so a value someone else changed meanwhile is not ignored for good.
const CacheLag = 10 * time.Second

// sweepAt is the least size at which Note and Remember drop expired entries: keys of deleted
// objects, and of objects not read again soon, are never asked for again.
const sweepAt = 256

// sweep drops the entries of written that are CacheLag old at now (at says when each was
// written) once there are *next of them, and sets *next to twice what is left (at least
// sweepAt), so that a memory of many fresh entries is not swept on every write.
func sweep[K comparable, V any](written map[K]V, next *int, now time.Time, at func(V) time.Time) {
	if len(written) < max(*next, sweepAt) {
		return
	}
	maps.DeleteFunc(written, func(_ K, v V) bool { return now.Sub(at(v)) >= CacheLag })
	*next = max(2*len(written), sweepAt)
}

// Writes remembers small writes (a label value, a finalizer) for CacheLag.
type Writes struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	written map[string]writeEntry
	// nextSweep is the size at which Note sweeps next.
	nextSweep int
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
	sweep(m.written, &m.nextSweep, now, func(e writeEntry) time.Time { return e.at })
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
