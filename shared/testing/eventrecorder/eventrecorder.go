// Package eventrecorder is an events.EventRecorder for tests that keeps what client-go's
// FakeRecorder drops: the objects an event is about. client-go's broadcaster groups events
// into one series by everything but the note, so two events with one reason about the same
// object and no related object become one Event counted twice, the second note lost. With
// this recorder a test can check that each event names its related object and that no two
// events fall into one series.
// Only tests import it, never production code; it imports no other RayFleet package.
package eventrecorder

import (
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/reference"
)

// SeriesKey is what client-go's events broadcaster groups events into one series by.
type SeriesKey struct {
	EventType, Reason, Action string
	Regarding, Related        corev1.ObjectReference
}

// Event is one recorded event.
type Event struct {
	Key  SeriesKey
	Note string
}

// Recorder records events; build it with New.
type Recorder struct {
	t      testing.TB
	scheme *runtime.Scheme
	mu     sync.Mutex
	events []Event
}

// New returns a recorder that resolves objects through scheme and fails t when it cannot
// (client-go would silently drop such a related object).
func New(t testing.TB, scheme *runtime.Scheme) *Recorder {
	return &Recorder{t: t, scheme: scheme}
}

// Eventf implements events.EventRecorder.
func (r *Recorder) Eventf(regarding, related runtime.Object, eventType, reason, action, note string, _ ...any) {
	key := SeriesKey{EventType: eventType, Reason: reason, Action: action}
	ref, err := reference.GetReference(r.scheme, regarding)
	if err != nil {
		r.t.Errorf("event %s: no reference to the regarding object: %v", reason, err)
		return
	}
	key.Regarding = *ref
	if related != nil {
		relatedRef, err := reference.GetReference(r.scheme, related)
		if err != nil {
			r.t.Errorf("event %s: no reference to the related %T: %v", reason, related, err)
			return
		}
		key.Related = *relatedRef
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, Event{Key: key, Note: note})
}

// Events returns the events recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// RelatedOf returns "Kind namespace/name" for the related object of each event with reason,
// "" for none, sorted.
func (r *Recorder) RelatedOf(reason string) []string {
	var out []string
	for _, e := range r.Events() {
		if e.Key.Reason == reason {
			out = append(out, relatedString(e.Key.Related))
		}
	}
	slices.Sort(out)
	return out
}

// SharedSeries returns, for every event that would be merged into an earlier one's series,
// the notes of both ("first", "second"); nil when each event stands alone.
func (r *Recorder) SharedSeries() [][2]string {
	var out [][2]string
	seen := map[SeriesKey]string{}
	for _, e := range r.Events() {
		if first, dup := seen[e.Key]; dup {
			out = append(out, [2]string{first, e.Note})
		}
		seen[e.Key] = e.Note
	}
	return out
}

func relatedString(ref corev1.ObjectReference) string {
	if ref == (corev1.ObjectReference{}) {
		return ""
	}
	return ref.Kind + " " + ref.Namespace + "/" + ref.Name
}
