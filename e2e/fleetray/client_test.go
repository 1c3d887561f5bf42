//go:build e2e

package fleetray

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet/loadbalancer"
)

// Request pacing: one request every requestEvery, each given up after requestTimeout. Ray
// Serve answers in milliseconds, but on a 2-core machine shared with other tests (load average
// above 100 at times) an answer can take seconds; those are counted as slow, not as failed,
// since a lost request is what the rollout must prevent.
const (
	requestEvery   = 20 * time.Millisecond
	requestTimeout = 30 * time.Second
	slowAnswer     = 5 * time.Second
)

// answer is one request through the Gateway.
type answer struct {
	sent time.Time
	took time.Duration
	// status is the HTTP status, 0 on a transport error.
	status int
	// err is the transport error, a status other than 200, or a body not the app's.
	err error
	// version is what the app answered; cluster the member whose load balancer forwarded it.
	version, cluster string
}

// failed reports whether the request failed.
func (a answer) failed() bool { return a.err != nil }

// String is the answer in one line.
func (a answer) String() string {
	at := a.sent.Format("15:04:05.000")
	if a.err != nil {
		return fmt.Sprintf("%s after %v: %v", at, a.took.Round(time.Millisecond), a.err)
	}
	return fmt.Sprintf("%s after %v: %s from %s", at, a.took.Round(time.Millisecond), a.version, a.cluster)
}

// requester sends GET requests to url one after the other until closed, keeping every answer.
type requester struct {
	url     string
	client  *http.Client
	mu      sync.Mutex
	answers []answer
	stop    context.CancelFunc
	done    chan struct{}
	once    sync.Once
}

// newRequester is a requester that has not started.
func newRequester(url string) *requester {
	return &requester{url: url, client: &http.Client{Timeout: requestTimeout}}
}

// startRequests starts sending requests to url until closed or the test ends.
func startRequests(t *testing.T, url string) *requester {
	r := newRequester(url)
	ctx, cancel := context.WithCancel(context.Background())
	r.stop, r.done = cancel, make(chan struct{})
	go r.run(ctx)
	t.Cleanup(r.close)
	return r
}

// close stops sending; the answers stay.
func (r *requester) close() {
	r.once.Do(func() {
		r.stop()
		<-r.done
		r.client.CloseIdleConnections()
	})
}

func (r *requester) run(ctx context.Context) {
	defer close(r.done)
	tick := time.NewTicker(requestEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		a := r.get(ctx)
		if ctx.Err() != nil {
			return
		}
		r.mu.Lock()
		r.answers = append(r.answers, a)
		r.mu.Unlock()
	}
}

// get sends one request.
func (r *requester) get(ctx context.Context) (a answer) {
	a = answer{sent: time.Now()}
	defer func() { a.took = time.Since(a.sent) }()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		a.err = err
		return a
	}
	resp, err := r.client.Do(req)
	if err != nil {
		a.err = err
		return a
	}
	defer func() { _ = resp.Body.Close() }()
	a.status = resp.StatusCode
	a.cluster = resp.Header.Get(loadbalancer.ClusterHeader)
	body, err := io.ReadAll(resp.Body)
	switch {
	case err != nil:
		a.err = fmt.Errorf("reading the body of a %d: %w", resp.StatusCode, err)
	case resp.StatusCode != http.StatusOK:
		a.err = fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	default:
		a.version, a.err = versionOf(body)
	}
	return a
}

// between are the answers to requests sent in [from, to).
func (r *requester) between(from, to time.Time) []answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []answer
	for _, a := range r.answers {
		if !a.sent.Before(from) && a.sent.Before(to) {
			out = append(out, a)
		}
	}
	return out
}
