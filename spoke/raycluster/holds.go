package raycluster

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// progressHold bounds how long a progress-only status change (status.ProgressOnly: the ready
// worker counts and the head's address while a cluster comes up, never a condition's status)
// waits for the rest of the cluster while its Pods are all starting normally (status.Starting).
// The Pods of one cluster are created together but turn ready one by one, within a second or
// two on a busy member; written step by step, a head and three workers cost five status writes
// where three (provisioning, head ready, ready) carry every change a reader acts on, fewer when
// the head turns ready with its workers (1.60 writes per cluster in a benchmark of 1,000
// clusters on two shared cores). A cluster that stays partly up shows its workers' progress at
// most this long after it happened.
const progressHold = 10 * time.Second

// progressHolds remembers, per RayCluster, since when a progress-only status change has been
// held back. The bound runs from the first change held, not from the latest: Pods turning
// ready one after the other must not postpone the write for good.
type progressHolds struct {
	clock  clock.PassiveClock
	window time.Duration
	mu     sync.Mutex
	since  map[types.NamespacedName]heldSince
}

// heldSince is when the held change of the object with this UID was first seen (an object
// recreated under the same name is another object).
type heldSince struct {
	uid types.UID
	at  time.Time
}

// newProgressHolds returns an empty memory; a zero window holds nothing.
func newProgressHolds(clk clock.PassiveClock, window time.Duration) *progressHolds {
	return &progressHolds{clock: clk, window: window, since: map[types.NamespacedName]heldSince{}}
}

// remaining starts or continues the hold of obj's progress-only change and returns how much
// longer it may wait; zero or less means it is due and must be written now.
func (h *progressHolds) remaining(obj metav1.Object) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}
	now := h.clock.Now()
	held, ok := h.since[key]
	if !ok || held.uid != obj.GetUID() {
		held = heldSince{uid: obj.GetUID(), at: now}
		h.since[key] = held
	}
	return held.at.Add(h.window).Sub(now)
}

// release ends the hold of key (its status was written, no longer differs from the one
// written, or the object is gone) and returns how long it lasted, zero if nothing was held.
func (h *progressHolds) release(key types.NamespacedName) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	held, ok := h.since[key]
	if !ok {
		return 0
	}
	delete(h.since, key)
	return h.clock.Since(held.at)
}

// held reports whether key has a change held back (for tests and logs).
func (h *progressHolds) held(key types.NamespacedName) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.since[key]
	return ok
}
