// Package requests sends GET requests to one URL at a steady pace while a test changes what
// answers them, and keeps every answer: when it was sent, how long it took and what it said.
// The tests that send traffic through a fleet's Gateway judge failures and shares from it.
package requests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Answer is one request; V is what a 200's body said.
type Answer[V any] struct {
	// Sent is when the request was sent.
	Sent time.Time
	// Took is how long the answer took.
	Took time.Duration
	// Status is the HTTP status, 0 on a transport error.
	Status int
	// Err is the transport error, a status other than 200, or a body Decode refused.
	Err error
	// Value is what Decode made of a 200.
	Value V
}

// Failed reports whether the request failed.
func (a Answer[V]) Failed() bool { return a.Err != nil }

// String is the answer in one line.
func (a Answer[V]) String() string {
	at := a.Sent.Format("15:04:05.000")
	if a.Err != nil {
		return fmt.Sprintf("%s after %v: %v", at, a.Took.Round(time.Millisecond), a.Err)
	}
	return fmt.Sprintf("%s after %v: %d %+v", at, a.Took.Round(time.Millisecond), a.Status, a.Value)
}

// Options pace the requests and read their answers.
type Options[V any] struct {
	// Every is the time between one request's start and the next; a request still waiting
	// delays the next (one at a time).
	Every time.Duration
	// Timeout gives a request up.
	Timeout time.Duration
	// Decode reads a 200; an error fails the request.
	Decode func(header http.Header, body []byte) (V, error)
}

// Requester sends the requests until closed, or until the test ends.
type Requester[V any] struct {
	url     string
	opts    Options[V]
	client  *http.Client
	mu      sync.Mutex
	answers []Answer[V]
	stop    context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// Start starts sending requests to url; they stop at Close or when the test ends.
func Start[V any](t testing.TB, url string, opts Options[V]) *Requester[V] {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Requester[V]{url: url, opts: opts, client: &http.Client{Timeout: opts.Timeout}, stop: cancel, done: make(chan struct{})}
	go r.run(ctx)
	t.Cleanup(r.Close)
	return r
}

// Get sends one request to url, on a connection of its own.
func Get[V any](ctx context.Context, url string, opts Options[V]) Answer[V] {
	c := &http.Client{Timeout: opts.Timeout, Transport: &http.Transport{DisableKeepAlives: true}}
	return get(ctx, c, url, opts.Decode)
}

// Close stops sending; the answers stay.
func (r *Requester[V]) Close() {
	r.once.Do(func() {
		r.stop()
		<-r.done
		r.client.CloseIdleConnections()
	})
}

func (r *Requester[V]) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(r.opts.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		a := get(ctx, r.client, r.url, r.opts.Decode)
		if ctx.Err() != nil {
			return // cut short by Close, not the server's doing
		}
		r.mu.Lock()
		r.answers = append(r.answers, a)
		r.mu.Unlock()
	}
}

// get sends one request with c.
func get[V any](ctx context.Context, c *http.Client, url string, decode func(http.Header, []byte) (V, error)) (a Answer[V]) {
	a.Sent = time.Now()
	defer func() { a.Took = time.Since(a.Sent) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		a.Err = err
		return a
	}
	resp, err := c.Do(req)
	if err != nil {
		a.Err = err
		return a
	}
	defer func() { _ = resp.Body.Close() }()
	a.Status = resp.StatusCode
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		a.Err = fmt.Errorf("reading the body of a %d: %w", resp.StatusCode, err)
	case resp.StatusCode != http.StatusOK:
		a.Err = fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	default:
		a.Value, a.Err = decode(resp.Header, body)
	}
	return a
}

// Between are the answers to requests sent in [from, to).
func (r *Requester[V]) Between(from, to time.Time) []Answer[V] {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Answer[V]
	for _, a := range r.answers {
		if !a.Sent.Before(from) && a.Sent.Before(to) {
			out = append(out, a)
		}
	}
	return out
}

// All is every answer so far.
func (r *Requester[V]) All() []Answer[V] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.answers)
}
