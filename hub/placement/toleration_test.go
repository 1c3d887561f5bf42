package placement

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/labels"
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
		name    string
		holders []string
		serving []string
		// ready are more Ready members the policy names, so that failover is not frozen.
		ready       []string
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
		name:    "past the window a member whose serve endpoint answers keeps the RayService",
		holders: []string{"long"}, serving: []string{"long"}, toleration: 5 * time.Minute,
		wantReady: []string{"long", "ok"},
		wantNotes: []string{"long: not ready: AgentReady is False since 2026-01-01T11:50:00Z, past its toleration, kept: its serve endpoint answers the hub's probe"},
	}, {
		name:    "a serving member kept holds no other failover back",
		holders: []string{"long", "unknown"}, serving: []string{"long"}, ready: []string{"r1", "r2"}, toleration: time.Minute,
		wantReady: []string{"long", "ok", "r1", "r2"},
		wantNotes: []string{"long: not ready: AgentReady is False since 2026-01-01T11:50:00Z, past its toleration, kept: its serve endpoint answers the hub's probe"},
	}, {
		name:    "a serving member within its window is tolerated as any other",
		holders: []string{"blip"}, serving: []string{"blip"}, toleration: 5 * time.Minute,
		wantReady:   []string{"blip", "ok"},
		wantNotes:   []string{"blip: not ready: AgentReady is False since 2026-01-01T11:59:00Z, tolerated until 2026-01-01T12:04:00Z"},
		wantWakeSet: 4 * time.Minute,
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
			for _, name := range tt.ready {
				members = append(members, Member{Name: name, Ready: true})
			}
			// The policy names the holders and one Ready member only, so that the fleet's other
			// not Ready members do not freeze failover (TestFailoverFreezeAndOneAtATime does).
			in := Input{Current: tt.holders, Now: t0,
				Policy: Policy{Toleration: tt.toleration, Names: append(slices.Concat(tt.holders, tt.ready), "ok")}}
			for _, name := range tt.serving {
				if in.Serving == nil {
					in.Serving = map[string]bool{}
				}
				in.Serving[name] = true
			}
			got := tolerate(members, &in)
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

// TestFailoverFreezeAndOneAtATime: members past their toleration fail over one at a time, the
// longest not Ready first; none while another failover is in flight; none while more than half
// of the members the policy selects (and at least two) are not Ready.
func TestFailoverFreezeAndOneAtATime(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	down := func(name string, since time.Duration) Member {
		return Member{Name: name, NotReadyReason: "not ready", NotReadySince: t0.Add(-since), Labels: map[string]string{"tier": "a"}}
	}
	up := func(name string) Member {
		return Member{Name: name, Ready: true, Labels: map[string]string{"tier": "a"}}
	}
	tierA := labels.SelectorFromSet(labels.Set{"tier": "a"})
	tests := []struct {
		name        string
		members     []Member
		current     []string
		failingOver string
		selector    labels.Selector
		wantReady   []string
		wantFrozen  bool
	}{{
		name:    "two past their toleration: the longest not Ready fails over first",
		members: []Member{down("a", 20*time.Minute), down("b", 30*time.Minute), up("c"), up("d"), up("e")},
		current: []string{"a", "b"}, wantReady: []string{"a", "c", "d", "e"},
	}, {
		name:    "equal times: by name",
		members: []Member{down("b", 20*time.Minute), down("a", 20*time.Minute), up("c"), up("d"), up("e")},
		current: []string{"a", "b"}, wantReady: []string{"b", "c", "d", "e"},
	}, {
		name:    "a failover in flight holds the next one",
		members: []Member{down("a", 20*time.Minute), up("c"), up("d")},
		current: []string{"a", "c"}, failingOver: "x", wantReady: []string{"a", "c", "d"},
	}, {
		name:    "half not Ready is not frozen",
		members: []Member{down("a", 20*time.Minute), down("b", 20*time.Minute), up("c"), up("d")},
		current: []string{"a"}, wantReady: []string{"c", "d"},
	}, {
		name:    "more than half not Ready freezes failover",
		members: []Member{down("a", 20*time.Minute), down("b", 20*time.Minute), up("c")},
		current: []string{"a"}, wantReady: []string{"a", "c"}, wantFrozen: true,
	}, {
		name:    "one member of one not Ready is no fleet-wide fault",
		members: []Member{down("a", 20*time.Minute)},
		current: []string{"a"}, wantReady: nil,
	}, {
		name: "only the members the policy selects count",
		members: []Member{down("a", 20*time.Minute), down("b", 20*time.Minute), up("c"),
			{Name: "x", Ready: true}, {Name: "y", Ready: true}},
		current: []string{"a"}, selector: tierA, wantReady: []string{"a", "c", "x", "y"}, wantFrozen: true,
	}, {
		name: "not selected members not Ready do not freeze",
		members: []Member{down("a", 20*time.Minute), up("c"), up("d"),
			{Name: "x", NotReadySince: t0}, {Name: "y", NotReadySince: t0}},
		current: []string{"a"}, selector: tierA, wantReady: []string{"c", "d"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{Current: tt.current, Now: t0, FailingOver: tt.failingOver,
				Policy: Policy{Toleration: 5 * time.Minute, Selector: tt.selector}}
			got := tolerate(tt.members, &in)
			var ready []string
			for _, m := range tt.members {
				if m.Ready {
					ready = append(ready, m.Name)
				}
			}
			slices.Sort(ready)
			if diff := cmp.Diff(tt.wantReady, ready); diff != "" {
				t.Errorf("ready members mismatch (-want +got):\n%s", diff)
			}
			if (got.frozen != "") != tt.wantFrozen {
				t.Errorf("frozen = %q, want frozen %v", got.frozen, tt.wantFrozen)
			}
		})
	}
}

// TestReadmission: a member back from an outage gets no new work until it has been Ready for
// the policy's readmission delay; one that holds the RayService keeps it; a decision short of
// members plans again when the readmission ends.
func TestReadmission(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		readmitted  time.Duration // how long ago "back" turned Ready again; 0: never out
		current     []string
		want        []string
		wantMessage string
		wantWake    time.Time
	}{{
		name: "never out: chosen", want: []string{"back"}, wantMessage: "1/1 clusters chosen",
	}, {
		name: "back 10s ago: not chosen, plan again when it is readmitted", readmitted: 10 * time.Second,
		wantMessage: "0/1 clusters chosen; back: readmitting: Ready again since 2026-01-01T11:59:50Z, new work from 2026-01-01T12:00:50Z",
		wantWake:    t0.Add(50 * time.Second),
	}, {
		name: "back for the whole delay: chosen", readmitted: time.Minute, want: []string{"back"},
		wantMessage: "1/1 clusters chosen",
	}, {
		name: "holding the RayService already: kept", readmitted: time.Second, current: []string{"back"},
		want: []string{"back"}, wantMessage: "1/1 clusters chosen",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := Member{Name: "back", Ready: true}
			if tt.readmitted != 0 {
				m.ReadmittedAt = t0.Add(-tt.readmitted)
			}
			d := Plan(Input{Policy: BuiltInPolicy(), Members: []Member{m}, Current: tt.current, Now: t0})
			if diff := cmp.Diff(tt.want, d.Clusters, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("clusters mismatch (-want +got):\n%s", diff)
			}
			if d.Message != tt.wantMessage {
				t.Errorf("message = %q, want %q", d.Message, tt.wantMessage)
			}
			if !d.Wake.Equal(tt.wantWake) {
				t.Errorf("wake = %v, want %v", d.Wake, tt.wantWake)
			}
		})
	}
}
