package dataplane

import (
	"errors"
	"testing"
	"time"
)

func TestHealthHysteresis(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fail := errors.New("connection refused")
	fresh := 3 * DefaultInterval
	type step struct {
		err         error
		wantVerdict Verdict
		wantChanged bool
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "one success: serving at once", steps: []step{{nil, Serving, true}}},
		{name: "one failure from nothing: not judged yet", steps: []step{{fail, Unknown, false}, {fail, Failing, true}}},
		{name: "a lost probe between successes moves nothing", steps: []step{{nil, Serving, true}, {fail, Serving, false}, {nil, Serving, false}}},
		{name: "two failures in a row: failing; one success: serving again",
			steps: []step{{nil, Serving, true}, {fail, Serving, false}, {fail, Failing, true}, {fail, Failing, false}, {nil, Serving, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Health
			now := t0
			for i, s := range tt.steps {
				now = now.Add(DefaultInterval)
				var changed bool
				h, changed = h.Observe(s.err, now, DefaultFailAfter)
				if got := h.Verdict(now, fresh); got != s.wantVerdict || changed != s.wantChanged {
					t.Errorf("step %d: verdict %v changed %v, want %v %v", i, got, changed, s.wantVerdict, s.wantChanged)
				}
			}
		})
	}
}

func TestHealthStale(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h, _ := Health{}.Observe(nil, t0, DefaultFailAfter)
	fresh := 3 * DefaultInterval
	if got := h.Verdict(t0.Add(fresh), fresh); got != Serving {
		t.Errorf("at the freshness limit: %v, want Serving", got)
	}
	if got := h.Verdict(t0.Add(fresh+time.Millisecond), fresh); got != Unknown {
		t.Errorf("past the freshness limit: %v, want Unknown (the control plane decides)", got)
	}
}
