// Package dataplane probes the serve addresses the hub routes traffic to, from the hub's own
// network, so that a backend's weight follows whether it answers rather than only what the
// member's API server says. Health holds one address's judged state; Prober runs the probes.
package dataplane

import "time"

// Defaults of Config.
const (
	// DefaultInterval is how often each address is probed: a failing backend leaves the route
	// within FailAfter intervals.
	DefaultInterval = 2 * time.Second
	// DefaultTimeout bounds one probe; a Ray Serve proxy answers its health path in
	// milliseconds, so a second means it is not serving.
	DefaultTimeout = time.Second
	// DefaultFailAfter is how many failures in a row turn an address failing: one lost packet
	// does not move traffic.
	DefaultFailAfter = 2
	// freshIntervals is how many intervals a judgement stays fresh: past that (the prober
	// stopped, or is stuck) the control plane's view applies again.
	freshIntervals = 3
)

// HealthPath is Ray Serve's proxy health path: 200 while the proxy serves.
const HealthPath = "/-/healthz"

// Health is what the probes say of one address.
type Health struct {
	// Known is false until the first judgement: a success, or FailAfter failures in a row.
	Known bool
	// Serving is the judgement: true after one success, false after FailAfter failures in a
	// row.
	Serving bool
	// Err is the last failure, "" after a success.
	Err string
	// Checked is when the last probe ended, on the prober's clock.
	Checked time.Time
	// failures counts the failures since the last success.
	failures int
}

// Observe returns h after a probe that ended at now with err (nil: it answered 200), and
// whether the judgement changed.
func (h Health) Observe(err error, now time.Time, failAfter int) (Health, bool) {
	before := h
	h.Checked = now
	if err == nil {
		h.Known, h.Serving, h.Err, h.failures = true, true, "", 0
		return h, before.Known != h.Known || before.Serving != h.Serving
	}
	h.Err = err.Error()
	h.failures++
	if h.failures >= max(failAfter, 1) {
		h.Known, h.Serving = true, false
	}
	return h, before.Known != h.Known || before.Serving != h.Serving
}

// Verdict is what a Health says of a backend at some time.
type Verdict int

// The verdicts.
const (
	// Unknown: no judgement, or one too old; the control plane's view decides.
	Unknown Verdict = iota
	// Serving: the address answered within the freshness window.
	Serving
	// Failing: the address failed FailAfter probes in a row, recently.
	Failing
)

// Verdict judges h at now: a judgement older than fresh is Unknown.
func (h Health) Verdict(now time.Time, fresh time.Duration) Verdict {
	switch {
	case !h.Known || now.Sub(h.Checked) > fresh:
		return Unknown
	case h.Serving:
		return Serving
	}
	return Failing
}
