package benchutil

import (
	"sync"
	"time"
)

// Readiness records when each of a known number of objects was created and when it was first
// seen ready; AllDone is closed when the last one is.
type Readiness struct {
	want    int
	mu      sync.Mutex
	created map[string]time.Time
	ready   map[string]time.Time
	allDone chan struct{}
}

// NewReadiness returns a record that waits for want objects.
func NewReadiness(want int) *Readiness {
	return &Readiness{
		want:    want,
		created: map[string]time.Time{},
		ready:   map[string]time.Time{},
		allDone: make(chan struct{}),
	}
}

// AllDone is closed once want objects have been seen ready.
func (r *Readiness) AllDone() <-chan struct{} { return r.allDone }

// MarkCreated records that name was created at at (just before its create request was sent).
func (r *Readiness) MarkCreated(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.created[name] = at
}

// MarkReady records that name was first seen ready at at; later calls for it are ignored.
func (r *Readiness) MarkReady(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.ready[name]; seen {
		return
	}
	r.ready[name] = at
	if len(r.ready) == r.want {
		close(r.allDone)
	}
}

// Latencies returns, sorted, the creation-to-ready durations of the objects seen ready, and
// the time the last of them turned ready.
func (r *Readiness) Latencies() ([]time.Duration, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []time.Duration
	var last time.Time
	for name, at := range r.ready {
		c, ok := r.created[name]
		if !ok {
			continue
		}
		out = append(out, at.Sub(c))
		if at.After(last) {
			last = at
		}
	}
	SortDurations(out)
	return out, last
}

// Created returns a copy of the creation times, by name.
func (r *Readiness) Created() map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]time.Time, len(r.created))
	for k, v := range r.created {
		out[k] = v
	}
	return out
}

// ReadyCount is how many objects have been seen ready.
func (r *Readiness) ReadyCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ready)
}
