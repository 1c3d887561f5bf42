package exclusivity

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Verdict is the gate's answer for one namespace.
type Verdict struct {
	// Allowed is true when the spoke may reconcile the namespace's objects.
	Allowed bool
	// Conflict is the controller the spoke gives way to; nil when allowed, and nil when not
	// allowed because no decision holds yet (at start, or after failed looks at the Leases).
	Conflict *Conflict
	// Waiting says why there is no decision, when Allowed is false and Conflict nil.
	Waiting string
}

// Gate holds the Claimer's latest decision for the reconcilers and the reporter. A decision
// holds for a bounded time: a spoke whose claim is not renewed looks gone to the others, so it
// must stop too. Until the first decision, and once the last one expired, nothing is allowed.
// Safe for concurrent use.
type Gate struct {
	clock   clock.PassiveClock
	recheck time.Duration

	mu         sync.RWMutex
	decision   Decision
	validUntil time.Time
	decided    bool
	lastErr    error
}

// NewGate returns a gate with no decision yet, timed by clk (nil means the real clock).
// recheck is how soon an object left alone is looked at again: the Claimer's interval (zero
// means DefaultInterval), so that it resumes within about a round of the other controller
// going.
func NewGate(clk clock.PassiveClock, recheck time.Duration) *Gate {
	if clk == nil {
		clk = clock.RealClock{}
	}
	if recheck <= 0 {
		recheck = DefaultInterval
	}
	return &Gate{clock: clk, recheck: recheck}
}

// Set records a decision that holds until validUntil.
func (g *Gate) Set(d Decision, validUntil time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.decision, g.validUntil, g.decided, g.lastErr = d, validUntil, true, nil
}

// Fail records a failed look at the Leases; the last decision holds until it expires.
func (g *Gate) Fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastErr = err
}

// Verdict returns whether objects of namespace may be reconciled now.
func (g *Gate) Verdict(namespace string) Verdict {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if waiting := g.waitingLocked(); waiting != "" {
		return Verdict{Waiting: waiting}
	}
	if c := g.decision.Blocking(namespace); c != nil {
		c := *c
		return Verdict{Conflict: &c}
	}
	return Verdict{Allowed: true}
}

// Decision returns the current decision and whether it holds (false before the first one and
// after it expired).
func (g *Gate) Decision() (Decision, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.decision, g.waitingLocked() == ""
}

// waitingLocked says why no decision holds, "" when one does.
func (g *Gate) waitingLocked() string {
	switch {
	case !g.decided && g.lastErr != nil:
		return fmt.Sprintf("not yet known whether another controller is active: %v", g.lastErr)
	case !g.decided:
		return "not yet known whether another controller is active"
	case !g.clock.Now().Before(g.validUntil):
		if g.lastErr != nil {
			return fmt.Sprintf("the spoke's claim on the cluster lapsed: %v", g.lastErr)
		}
		return "the spoke's claim on the cluster lapsed"
	}
	return ""
}

// Problem is what the gate tells the ClusterReport: the reason and message of AgentReady=False,
// and whether another spoke, which this one gives way to, writes the report instead. ok is false
// when nothing is wrong.
type Problem struct {
	// Reason is ReasonAnotherOperatorActive when another controller is active; "" when the
	// spoke is only waiting for its first decision (AgentNotReady's case).
	Reason string
	// Message says who or what.
	Message string
	// AnotherSpokeReports is true when the spoke gives way to another spoke over all of its
	// namespaces: that spoke writes the ClusterReport, and two writers would make it flap.
	AnotherSpokeReports bool
}

// Problem returns what keeps the spoke from reconciling, ok false when nothing does.
func (g *Gate) Problem(watchNamespaces []string) (p Problem, ok bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if waiting := g.waitingLocked(); waiting != "" {
		return Problem{Message: waiting}, true
	}
	if len(g.decision.Conflicts) == 0 {
		return Problem{}, false
	}
	msgs := make([]string, 0, len(g.decision.Conflicts))
	kubeRay := false
	for _, c := range g.decision.Conflicts {
		msgs = append(msgs, c.Message())
		kubeRay = kubeRay || c.Holder.Kind == KindKubeRay
	}
	return Problem{
		Reason:              ReasonAnotherOperatorActive,
		Message:             strings.Join(msgs, "; "),
		AnotherSpokeReports: !kubeRay && g.blockedEverywhereLocked(watchNamespaces),
	}, true
}

// blockedEverywhereLocked reports whether conflicts cover every namespace in scope (empty
// meaning all, which only a conflict covering all namespaces covers).
func (g *Gate) blockedEverywhereLocked(scope []string) bool {
	if len(scope) == 0 {
		for _, c := range g.decision.Conflicts {
			if len(c.Holder.Namespaces) == 0 {
				return true
			}
		}
		return false
	}
	for _, ns := range scope {
		if g.decision.Blocking(ns) == nil {
			return false
		}
	}
	return true
}
