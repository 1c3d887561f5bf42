// Package eventseries makes the spoke's repeated events one Event each, counted in its series.
// client-go's events broadcaster merges an event into an earlier one's series when both name
// the same objects, reason and action, but the references it builds carry the objects'
// resourceVersions, which change with nearly every reconcile: each repeat became an Event
// object (and a write) of its own. The broadcaster does not look at the message, so dropping
// the resourceVersion alone would fold a new message into an older series and hide it; this
// package instead gives every repeat of one message the resourceVersions its first emission
// had, and a new message the objects' current ones.
// A leaf: it imports no other RayFleet package.
package eventseries

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
)

// idle is how long a message's first resourceVersions are kept after its last repeat. It
// outlasts the broadcaster's own series (ended after 6 idle minutes), so a repeat never
// starts a second series the broadcaster would still merge into the first.
const idle = 10 * time.Minute

// key is one message about one pair of objects, the objects without resourceVersion.
type key struct {
	eventType, reason, action, note string
	regarding, related              corev1.ObjectReference
}

// first is what a message's first emission named.
type first struct {
	regardingVersion, relatedVersion string
	seen                             time.Time
}

// Recorder passes events on to an events.EventRecorder as references whose resourceVersions
// are those of the message's first emission, so repeats fall into one series.
type Recorder struct {
	next   events.EventRecorder
	scheme *runtime.Scheme
	clock  clock.PassiveClock

	mu     sync.Mutex
	firsts map[key]first
	pruned time.Time
}

var _ events.EventRecorder = (*Recorder)(nil)

// New returns a Recorder recording through next; scheme resolves the objects' kinds, as it
// does for next.
func New(next events.EventRecorder, scheme *runtime.Scheme) *Recorder {
	return newRecorder(next, scheme, clock.RealClock{})
}

func newRecorder(next events.EventRecorder, scheme *runtime.Scheme, clk clock.PassiveClock) *Recorder {
	return &Recorder{next: next, scheme: scheme, clock: clk, firsts: map[key]first{}, pruned: clk.Now()}
}

// Eventf implements events.EventRecorder.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, args ...any) {
	regardingRef, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		// next reports an object it cannot refer to, as it always has.
		r.next.Eventf(regarding, related, eventType, reason, action, note, args...)
		return
	}
	regardingRef = regardingRef.DeepCopy() // GetReference returns a reference itself.
	var relatedRef *corev1.ObjectReference
	if related != nil {
		if ref, err := reference.GetReference(r.scheme, related); err == nil {
			relatedRef = ref.DeepCopy()
		}
	}
	k := key{eventType: eventType, reason: reason, action: action, note: fmt.Sprintf(note, args...),
		regarding: *regardingRef}
	k.regarding.ResourceVersion = ""
	if relatedRef != nil {
		k.related = *relatedRef
		k.related.ResourceVersion = ""
	}
	f := r.first(k, regardingRef.ResourceVersion, relatedVersion(relatedRef))
	regardingRef.ResourceVersion = f.regardingVersion
	var relatedObj runtime.Object
	if relatedRef != nil {
		relatedRef.ResourceVersion = f.relatedVersion
		relatedObj = relatedRef
	}
	r.next.Eventf(regardingRef, relatedObj, eventType, reason, action, "%s", k.note)
}

// first returns what k's first emission named, recording this one as the first when k has
// none or has been idle too long, and forgets the idle ones now and then.
func (r *Recorder) first(k key, regardingVersion, relatedVersion string) first {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.pruned) >= idle {
		for old, f := range r.firsts {
			if now.Sub(f.seen) >= idle {
				delete(r.firsts, old)
			}
		}
		r.pruned = now
	}
	f, ok := r.firsts[k]
	if !ok || now.Sub(f.seen) >= idle {
		f = first{regardingVersion: regardingVersion, relatedVersion: relatedVersion}
	}
	f.seen = now
	r.firsts[k] = f
	return f
}

func relatedVersion(ref *corev1.ObjectReference) string {
	if ref == nil {
		return ""
	}
	return ref.ResourceVersion
}
