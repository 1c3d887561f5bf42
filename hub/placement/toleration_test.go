package placement

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBuiltInPolicyToleration(t *testing.T) {
	if got := BuiltInPolicy().Toleration; got != 300*time.Second {
		t.Errorf("BuiltInPolicy().Toleration = %v, want 5m", got)
	}
}

func TestTolerate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	notReady := func(name, reason string, since time.Duration) Member {
		return Member{Name: name, NotReadyReason: reason, NotReadySince: t0.Add(since)}
	}
	const agent = "not ready: AgentReady is False"
	// fleet is the members as the hub maps them, in name order. A member being removed from
	// the fleet has no NotReadySince.
	fleet := func() []Member {
		return []Member{
			notReady("blip", agent, -time.Minute),
			notReady("edge", agent, -5*time.Minute),
			{Name: "gone", NotReadyReason: "being removed from the fleet"},
			notReady("long", agent, -10*time.Minute),
			notReady("nocond", "no Ready condition yet", -time.Hour),
			{Name: "ok", Ready: true},
			notReady("unknown", agent, -2*time.Minute),
		}
	}
	tests := []struct {
		name        string
		holders     []string
		toleration  time.Duration
		wantReady   []string
		wantNotes   []string
		wantWakeSet time.Duration
	}{{
		name:    "a holder not ready for a minute is tolerated until the end of its window",
		holders: []string{"blip"}, toleration: 5 * time.Minute,
		wantReady:   []string{"blip", "ok"},
		wantNotes:   []string{"blip: not ready: AgentReady is False since 2026-01-01T11:59:00Z, tolerated until 2026-01-01T12:04:00Z"},
		wantWakeSet: 4 * time.Minute,
	}, {
		name:    "Unknown counts as not ready; the earliest end is the wake-up",
		holders: []string{"blip", "unknown"}, toleration: 5 * time.Minute,
		wantReady: []string{"blip", "ok", "unknown"},
		wantNotes: []string{
			"blip: not ready: AgentReady is False since 2026-01-01T11:59:00Z, tolerated until 2026-01-01T12:04:00Z",
			"unknown: not ready: AgentReady is False since 2026-01-01T11:58:00Z, tolerated until 2026-01-01T12:03:00Z",
		},
		wantWakeSet: 3 * time.Minute,
	}, {
		name:    "a member not holding the RayService is not tolerated",
		holders: nil, toleration: 5 * time.Minute,
		wantReady: []string{"ok"},
	}, {
		name:    "past the window the member fails over",
		holders: []string{"long"}, toleration: 5 * time.Minute,
		wantReady: []string{"ok"},
	}, {
		name:    "the window's end is exclusive",
		holders: []string{"edge"}, toleration: 5 * time.Minute,
		wantReady: []string{"ok"},
	}, {
		name:    "zero toleration fails over at once",
		holders: []string{"blip"}, toleration: 0,
		wantReady: []string{"ok"},
	}, {
		name:    "without a Ready condition the wait starts at creation",
		holders: []string{"nocond"}, toleration: 2 * time.Hour,
		wantReady:   []string{"nocond", "ok"},
		wantNotes:   []string{"nocond: no Ready condition yet since 2026-01-01T11:00:00Z, tolerated until 2026-01-01T13:00:00Z"},
		wantWakeSet: time.Hour,
	}, {
		name:    "a member being removed is never tolerated",
		holders: []string{"gone"}, toleration: time.Hour,
		wantReady: []string{"ok"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			members := fleet()
			got := tolerate(members, tt.holders, tt.toleration, t0)
			var ready []string
			for _, m := range members {
				if m.Ready {
					ready = append(ready, m.Name)
					if m.NotReadyReason != "" {
						t.Errorf("%s is ready with NotReadyReason %q", m.Name, m.NotReadyReason)
					}
				}
			}
			if diff := cmp.Diff(tt.wantReady, ready); diff != "" {
				t.Errorf("ready members mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNotes, got.notes); diff != "" {
				t.Errorf("notes mismatch (-want +got):\n%s", diff)
			}
			var wantWake time.Time
			if tt.wantWakeSet != 0 {
				wantWake = t0.Add(tt.wantWakeSet)
			}
			if !got.wake.Equal(wantWake) {
				t.Errorf("wake = %v, want %v", got.wake, wantWake)
			}
		})
	}
}

// TestToleratedMemberKeepsPlacement runs the planner with a blipping current member: within
// the built-in policy's toleration the copy stays there instead of moving to the other member,
// and the decision says until when and when to plan again; after it, the copy moves.
func TestToleratedMemberKeepsPlacement(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		since       time.Duration
		want        []string
		wantMessage string
		wantWake    time.Time
	}{{
		name: "within the window", since: 10 * time.Second, want: []string{"eu"},
		wantMessage: "1/1 clusters chosen; eu: not ready: MemberNotReady since 2026-01-01T11:59:50Z, tolerated until 2026-01-01T12:04:50Z",
		wantWake:    t0.Add(290 * time.Second),
	}, {
		name: "after the window", since: 301 * time.Second, want: []string{"us"},
		wantMessage: "1/1 clusters chosen",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{
				Policy: BuiltInPolicy(),
				Members: []Member{
					{Name: "eu", NotReadyReason: "not ready: MemberNotReady", NotReadySince: t0.Add(-tt.since)},
					{Name: "us", Ready: true},
				},
				Current: []string{"eu"},
				Now:     t0,
			}
			d := Plan(in)
			if diff := cmp.Diff(tt.want, d.Clusters); diff != "" {
				t.Errorf("Plan() clusters mismatch (-want +got):\n%s", diff)
			}
			if d.Message != tt.wantMessage {
				t.Errorf("Plan() message = %q, want %q", d.Message, tt.wantMessage)
			}
			if !d.Wake.Equal(tt.wantWake) {
				t.Errorf("Plan() wake = %v, want %v", d.Wake, tt.wantWake)
			}
			if in.Members[0].Ready {
				t.Errorf("Plan() changed its input: %+v", in.Members[0])
			}
		})
	}
}
