package dataplane

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	sharedmetrics "github.com/rayfleet/rayfleet/shared/metrics"
)

// Config configures a Prober; zero fields take the defaults.
type Config struct {
	Interval  time.Duration
	Timeout   time.Duration
	FailAfter int
	// Clock times the rounds and the judgements.
	Clock clock.WithTicker
	// Client makes the probes; nil means one without keep-alives, so that each probe opens a
	// connection as a new request through the gateway would.
	Client *http.Client
	// Registerer is where rayfleet_serve_probe_total is registered; nil registers nothing.
	Registerer prometheus.Registerer
}

// Prober probes, every interval, the serve addresses the RayServices routing to them want
// (Want), and tells (Changes) which RayServices use an address whose judgement changed.
type Prober struct {
	cfg    Config
	probes *prometheus.CounterVec
	// changes carries the RayServices to reconcile; buffered, and a full buffer blocks a round.
	changes chan event.TypedGenericEvent[types.NamespacedName]
	// kick asks for a round now: an address is new, and until its first verdict the control
	// plane's view alone decides its traffic.
	kick chan struct{}

	mu sync.Mutex
	// wants are, per RayService, its addresses and the member each belongs to.
	wants  map[types.NamespacedName]map[string]string
	health map[string]Health
}

// New returns a Prober; Start runs it.
func New(cfg Config) (*Prober, error) {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.FailAfter <= 0 {
		cfg.FailAfter = DefaultFailAfter
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	p := &Prober{
		cfg:     cfg,
		changes: make(chan event.TypedGenericEvent[types.NamespacedName], 1024),
		kick:    make(chan struct{}, 1),
		wants:   map[types.NamespacedName]map[string]string{},
		health:  map[string]Health{},
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rayfleet_serve_probe_total",
			Help: "Probes of members' serve addresses from the hub, by member and result (ok, failed).",
		}, []string{"member", "result"}),
	}
	if cfg.Registerer != nil {
		var err error
		if p.probes, err = sharedmetrics.RegisterOrReuse(cfg.Registerer, p.probes, "rayfleet_serve_probe_total"); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Fresh is how long a judgement counts: a few intervals.
func (p *Prober) Fresh() time.Duration {
	return freshIntervals * p.cfg.Interval
}

// Changes carries the RayServices whose addresses changed judgement.
func (p *Prober) Changes() <-chan event.TypedGenericEvent[types.NamespacedName] {
	return p.changes
}

// Want sets the addresses key routes to (address → member); an empty map forgets key. An
// address no RayService wants any more is no longer probed, and its state is dropped.
func (p *Prober) Want(key types.NamespacedName, addrs map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if maps.Equal(p.wants[key], addrs) {
		// The steady state, every reconcile: nothing to recompute.
		return
	}
	before := p.wantedLocked()
	if len(addrs) == 0 {
		delete(p.wants, key)
	} else {
		p.wants[key] = maps.Clone(addrs)
	}
	for addr := range addrs {
		if _, known := before[addr]; !known {
			select {
			case p.kick <- struct{}{}:
			default:
			}
			break
		}
	}
	wanted := p.wantedLocked()
	for addr := range p.health {
		if _, ok := wanted[addr]; !ok {
			delete(p.health, addr)
		}
	}
}

// Health returns the state of each of addrs (the zero Health for one not probed yet).
func (p *Prober) Health(addrs []string) map[string]Health {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]Health, len(addrs))
	for _, a := range addrs {
		out[a] = p.health[a]
	}
	return out
}

// wantedLocked maps every wanted address to its member.
func (p *Prober) wantedLocked() map[string]string {
	out := map[string]string{}
	for _, addrs := range p.wants {
		maps.Copy(out, addrs)
	}
	return out
}

// Start probes every interval until ctx ends (a manager Runnable).
func (p *Prober) Start(ctx context.Context) error {
	t := p.cfg.Clock.NewTicker(p.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
			p.Round(ctx)
		case <-p.kick:
			p.Round(ctx)
		}
	}
}

// NeedLeaderElection: only the leading hub writes routes, so only it probes.
func (p *Prober) NeedLeaderElection() bool { return true }

// Round probes every wanted address once, in parallel, records the results and sends the
// RayServices whose addresses changed judgement to Changes.
func (p *Prober) Round(ctx context.Context) {
	p.mu.Lock()
	wanted := p.wantedLocked()
	p.mu.Unlock()
	results := make(map[string]error, len(wanted))
	var (
		wg  sync.WaitGroup
		rmu sync.Mutex
	)
	for addr := range wanted {
		wg.Go(func() {
			err := p.probe(ctx, addr)
			rmu.Lock()
			results[addr] = err
			rmu.Unlock()
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	for _, key := range p.record(wanted, results) {
		select {
		case p.changes <- event.TypedGenericEvent[types.NamespacedName]{Object: key}:
		case <-ctx.Done():
			return
		}
	}
}

// record stores results and returns the RayServices using an address whose judgement changed.
func (p *Prober) record(wanted map[string]string, results map[string]error) []types.NamespacedName {
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := map[string]bool{}
	still := p.wantedLocked()
	for addr, err := range results {
		result := "ok"
		if err != nil {
			result = "failed"
		}
		p.probes.WithLabelValues(wanted[addr], result).Inc()
		if _, ok := still[addr]; !ok {
			continue
		}
		var c bool
		if p.health[addr], c = p.health[addr].Observe(err, now, p.cfg.FailAfter); c {
			changed[addr] = true
		}
	}
	var keys []types.NamespacedName
	for key, addrs := range p.wants {
		for addr := range addrs {
			if changed[addr] {
				keys = append(keys, key)
				break
			}
		}
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return keys
}

// probe GETs the address's health path: nil for any answer below 500 within the timeout. A
// server error, a refused connection or a timeout fails; a 404 still shows a server taking
// requests there, which is what a gateway's outlier detection judges too.
func (p *Prober) probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+HealthPath, nil)
	if err != nil {
		return err
	}
	resp, err := p.cfg.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode >= http.StatusInternalServerError {
		return fmt.Errorf("GET %s: %s", HealthPath, resp.Status)
	}
	return nil
}
