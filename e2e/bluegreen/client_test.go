//go:build e2e

package bluegreen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet/loadbalancer"
)

// Request pacing: one request every requestEvery, each given up after requestTimeout (a
// stand-in answers at once; a request that takes longer is a failure worth seeing).
const (
	requestEvery   = 20 * time.Millisecond
	requestTimeout = 2 * time.Second
)

// answer is one request through the Gateway.
type answer struct {
	// sent is when the request was sent.
	sent time.Time
	// took is how long the answer took.
	took time.Duration
	// status is the HTTP status, 0 on a transport error.
	status int
	// err is the transport error, or why the body could not be read.
	err error
	// from is who answered a 200.
	from loadbalancer.Response
}

// failed reports whether the request failed: a transport error or a status other than 200.
func (a answer) failed() bool {
	return a.err != nil || a.status != http.StatusOK
}

// String is the answer in one line.
func (a answer) String() string {
	at := a.sent.Format("15:04:05.000")
	if a.err != nil {
		return fmt.Sprintf("%s after %v: %v", at, a.took.Round(time.Millisecond), a.err)
	}
	return fmt.Sprintf("%s after %v: %d from %s revision %s", at, a.took.Round(time.Millisecond), a.status, a.from.Cluster, a.from.Revision)
}

// requester sends GET requests through the Gateway one after the other, every requestEvery,
// until stopped, and keeps every answer.
type requester struct {
	url     string
	client  *http.Client
	mu      sync.Mutex
	answers []answer
	stop    context.CancelFunc
	done    chan struct{}
}

// startRequests starts sending requests to url until the test ends (or stop).
func startRequests(t *testing.T, url string) *requester {
	ctx, cancel := context.WithCancel(context.Background())
	r := &requester{
		url:    url,
		client: &http.Client{Timeout: requestTimeout},
		stop:   cancel,
		done:   make(chan struct{}),
	}
	go r.run(ctx)
	t.Cleanup(r.close)
	return r
}

// close stops sending; the answers stay.
func (r *requester) close() {
	r.stop()
	<-r.done
	r.client.CloseIdleConnections()
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
			return // cut short by close, not the gateway's doing
		}
		r.mu.Lock()
		r.answers = append(r.answers, a)
		r.mu.Unlock()
	}
}

// get sends one request.
func (r *requester) get(ctx context.Context) answer {
	a := answer{sent: time.Now()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url, nil)
	if err != nil {
		a.err = err
		return a
	}
	resp, err := r.client.Do(req)
	if err != nil {
		a.err = err
		a.took = time.Since(a.sent)
		return a
	}
	defer func() { _ = resp.Body.Close() }()
	a.status = resp.StatusCode
	body, err := io.ReadAll(resp.Body)
	a.took = time.Since(a.sent)
	switch {
	case err != nil:
		a.err = fmt.Errorf("reading the body of a %d: %w", resp.StatusCode, err)
	case resp.StatusCode != http.StatusOK:
		a.err = fmt.Errorf("status %d: %s", resp.StatusCode, strings.TrimSpace(string(body)))
	default:
		if err := json.Unmarshal(body, &a.from); err != nil {
			a.err = fmt.Errorf("a 200 whose body is not a stand-in's answer (%q): %w", body, err)
		}
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

// all is every answer so far.
func (r *requester) all() []answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.answers)
}

// tally counts answers by the cluster that gave them and by "cluster revision", leaving out
// failures.
type tally struct {
	total, failed int
	byCluster     map[string]int
	byRevision    map[string]int
}

// count tallies answers.
func count(answers []answer) tally {
	t := tally{total: len(answers), byCluster: map[string]int{}, byRevision: map[string]int{}}
	for _, a := range answers {
		if a.failed() {
			t.failed++
			continue
		}
		t.byCluster[a.from.Cluster]++
		t.byRevision[a.from.Cluster+" "+a.from.Revision]++
	}
	return t
}

// share is the fraction of the answered requests that cluster answered.
func (t tally) share(cluster string) float64 {
	answered := t.total - t.failed
	if answered == 0 {
		return 0
	}
	return float64(t.byCluster[cluster]) / float64(answered)
}

// String is the tally in one line.
func (t tally) String() string {
	parts := make([]string, 0, len(t.byRevision))
	for _, k := range slices.Sorted(maps.Keys(t.byRevision)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, t.byRevision[k]))
	}
	return fmt.Sprintf("%d requests, %d failed; %s", t.total, t.failed, strings.Join(parts, ", "))
}
