package dataplane

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// serveStandIn answers /-/healthz like a Ray Serve proxy while healthy is true, 503 otherwise.
func serveStandIn(t *testing.T, healthy *atomic.Bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != HealthPath {
			http.NotFound(w, r)
			return
		}
		if !healthy.Load() {
			http.Error(w, "unhealthy", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("success"))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestProberRounds(t *testing.T) {
	var eu, us atomic.Bool
	eu.Store(true)
	us.Store(true)
	euAddr, usAddr := serveStandIn(t, &eu), serveStandIn(t, &us)
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	reg := prometheus.NewRegistry()
	p, err := New(Config{Clock: clk, Registerer: reg, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	svc := types.NamespacedName{Namespace: "team", Name: "svc"}
	other := types.NamespacedName{Namespace: "team", Name: "other"}
	p.Want(svc, map[string]string{euAddr: "eu", usAddr: "us"})
	p.Want(other, map[string]string{usAddr: "us"})
	ctx := context.Background()

	round := func() []types.NamespacedName {
		clk.Step(DefaultInterval)
		p.Round(ctx)
		var got []types.NamespacedName
		for {
			select {
			case e := <-p.Changes():
				got = append(got, e.Object)
			default:
				return got
			}
		}
	}
	verdicts := func() (Verdict, Verdict) {
		h := p.Health([]string{euAddr, usAddr})
		return h[euAddr].Verdict(clk.Now(), p.Fresh()), h[usAddr].Verdict(clk.Now(), p.Fresh())
	}

	if woken := round(); len(woken) != 2 {
		t.Fatalf("first round woke %v, want both RayServices (both addresses judged)", woken)
	}
	if e, u := verdicts(); e != Serving || u != Serving {
		t.Fatalf("verdicts %v %v, want Serving Serving", e, u)
	}
	eu.Store(false)
	if woken := round(); len(woken) != 0 {
		t.Errorf("one failure woke %v, want nothing (hysteresis)", woken)
	}
	woken := round()
	if len(woken) != 1 || woken[0] != svc {
		t.Errorf("second failure woke %v, want only %s (the one routing to eu)", woken, svc)
	}
	e, u := verdicts()
	if e != Failing || u != Serving {
		t.Errorf("verdicts %v %v, want Failing Serving", e, u)
	}
	if h := p.Health([]string{euAddr})[euAddr]; !strings.Contains(h.Err, "503") {
		t.Errorf("failure %q, want the status it answered", h.Err)
	}
	eu.Store(true)
	if woken := round(); len(woken) != 1 || woken[0] != svc {
		t.Errorf("recovery woke %v, want %s", woken, svc)
	}
	if got := testutil.ToFloat64(p.probes.WithLabelValues("eu", "failed")); got != 2 {
		t.Errorf("rayfleet_serve_probe_total{member=eu,result=failed} = %v, want 2", got)
	}

	// An address no RayService routes to any more is not probed, and its state is dropped.
	p.Want(svc, nil)
	round()
	if got := testutil.ToFloat64(p.probes.WithLabelValues("eu", "ok")); got != 2 {
		t.Errorf("eu probed after it was dropped: %v successes, want 2", got)
	}
	if h := p.Health([]string{euAddr})[euAddr]; h.Known {
		t.Errorf("dropped address still judged: %+v", h)
	}
}

func TestProberTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-block }))
	t.Cleanup(func() { close(block); srv.Close() })
	p, err := New(Config{Clock: clocktesting.NewFakeClock(time.Now()), Timeout: 50 * time.Millisecond, FailAfter: 1})
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.TrimPrefix(srv.URL, "http://")
	p.Want(types.NamespacedName{Namespace: "a", Name: "b"}, map[string]string{addr: "eu"})
	p.Round(context.Background())
	h := p.Health([]string{addr})[addr]
	if !h.Known || h.Serving || !strings.Contains(h.Err, "deadline") {
		t.Errorf("a proxy that does not answer: %+v, want failing on the timeout", h)
	}
}

func TestProberKicksOnNewAddress(t *testing.T) {
	p, err := New(Config{Clock: clocktesting.NewFakeClock(time.Now())})
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "a", Name: "b"}
	kicked := func() bool {
		select {
		case <-p.kick:
			return true
		default:
			return false
		}
	}
	p.Want(key, map[string]string{"10.0.0.1:8000": "eu"})
	if !kicked() {
		t.Error("a new address asked for no round: its first verdict would wait a whole interval")
	}
	p.Want(key, map[string]string{"10.0.0.1:8000": "eu"})
	if kicked() {
		t.Error("the same addresses asked for a round")
	}
}

func TestProbeStatuses(t *testing.T) {
	p, err := New(Config{Clock: clocktesting.NewFakeClock(time.Now()), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		status int
		fails  bool
	}{
		{status: http.StatusOK},
		{status: http.StatusNotFound},
		{status: http.StatusInternalServerError, fails: true},
		{status: http.StatusServiceUnavailable, fails: true},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
			}))
			defer srv.Close()
			err := p.probe(context.Background(), strings.TrimPrefix(srv.URL, "http://"))
			if (err != nil) != tc.fails {
				t.Errorf("probe of a server answering %d: %v, want failing %v", tc.status, err, tc.fails)
			}
		})
	}
}
