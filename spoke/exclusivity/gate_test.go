package exclusivity

import (
	"errors"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestGateVerdict(t *testing.T) {
	kubeRay := Conflict{Reason: ReasonAnotherOperatorActive, Holder: Holder{Kind: KindKubeRay, Identity: "kuberay"}}
	scoped := Conflict{Reason: ReasonAnotherSpokeActive, Holder: Holder{Kind: KindSpoke, Identity: "spoke", Namespaces: []string{"team-a"}}}
	tests := []struct {
		name string
		// setUp drives a fresh gate whose clock stands at now; the verdict is taken after it.
		setUp       func(g *Gate, clk *clocktesting.FakeClock)
		namespace   string
		wantAllowed bool
		wantHolder  string
		wantWaiting string
	}{
		{
			name: "nothing decided yet: wait", setUp: func(*Gate, *clocktesting.FakeClock) {},
			wantWaiting: "not yet known whether another controller is active",
		},
		{
			name: "the first round failed: wait, saying why",
			setUp: func(g *Gate, _ *clocktesting.FakeClock) {
				g.Fail(errors.New("leases is forbidden"))
			},
			wantWaiting: "not yet known whether another controller is active: leases is forbidden",
		},
		{
			name: "no conflict: allowed",
			setUp: func(g *Gate, clk *clocktesting.FakeClock) {
				g.Set(Decision{}, clk.Now().Add(15*time.Second))
			},
			wantAllowed: true,
		},
		{
			name: "KubeRay active: refused everywhere",
			setUp: func(g *Gate, clk *clocktesting.FakeClock) {
				g.Set(Decision{Conflicts: []Conflict{kubeRay}}, clk.Now().Add(15*time.Second))
			},
			namespace: "anything", wantHolder: "kuberay",
		},
		{
			name: "a spoke on team-a: refused there",
			setUp: func(g *Gate, clk *clocktesting.FakeClock) {
				g.Set(Decision{Conflicts: []Conflict{scoped}}, clk.Now().Add(15*time.Second))
			},
			namespace: "team-a", wantHolder: "spoke",
		},
		{
			name: "a spoke on team-a: allowed elsewhere",
			setUp: func(g *Gate, clk *clocktesting.FakeClock) {
				g.Set(Decision{Conflicts: []Conflict{scoped}}, clk.Now().Add(15*time.Second))
			},
			namespace: "team-b", wantAllowed: true,
		},
		{
			name: "a failed round keeps the last decision while it holds",
			setUp: func(g *Gate, clk *clocktesting.FakeClock) {
				g.Set(Decision{}, clk.Now().Add(15*time.Second))
				clk.Step(10 * time.Second)
				g.Fail(errors.New("connection refused"))
			},
			wantAllowed: true,
		},
		{
			name: "an expired decision: the claim lapsed, so wait",
			setUp: func(g *Gate, clk *clocktesting.FakeClock) {
				g.Set(Decision{}, clk.Now().Add(15*time.Second))
				clk.Step(15 * time.Second)
				g.Fail(errors.New("connection refused"))
			},
			wantWaiting: "the spoke's claim on the cluster lapsed: connection refused",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(now)
			g := NewGate(clk, time.Second)
			tt.setUp(g, clk)
			v := g.Verdict(tt.namespace)
			holder := ""
			if v.Conflict != nil {
				holder = v.Conflict.Holder.Identity
			}
			if v.Allowed != tt.wantAllowed || holder != tt.wantHolder || v.Waiting != tt.wantWaiting {
				t.Errorf("Verdict = {allowed %v, holder %q, waiting %q}, want {%v, %q, %q}",
					v.Allowed, holder, v.Waiting, tt.wantAllowed, tt.wantHolder, tt.wantWaiting)
			}
		})
	}
}

func TestGateProblem(t *testing.T) {
	kubeRay := Conflict{Reason: ReasonAnotherOperatorActive, Holder: Holder{Kind: KindKubeRay, Identity: "kuberay"}}
	spokeAll := Conflict{Reason: ReasonAnotherSpokeActive, Holder: Holder{Kind: KindSpoke, Identity: "spoke-all"}}
	spokeA := Conflict{Reason: ReasonAnotherSpokeActive, Holder: Holder{Kind: KindSpoke, Identity: "spoke-a", Namespaces: []string{"team-a"}}}
	tests := []struct {
		name      string
		decided   bool
		decision  Decision
		scope     []string
		wantOK    bool
		want      Problem
		wantInMsg []string
	}{
		{name: "not decided yet: not ready, no reason of its own", wantOK: true,
			wantInMsg: []string{"not yet known"}},
		{name: "nothing wrong", decided: true},
		{
			name: "KubeRay: AnotherOperatorActive, and this spoke still reports", decided: true,
			decision: Decision{Conflicts: []Conflict{kubeRay}}, wantOK: true,
			want: Problem{Reason: ReasonAnotherOperatorActive}, wantInMsg: []string{"KubeRay's operator", "kuberay"},
		},
		{
			name: "KubeRay and a spoke: both named; this spoke reports (the other is refused by KubeRay too)", decided: true,
			decision: Decision{Conflicts: []Conflict{kubeRay, spokeAll}}, wantOK: true,
			want: Problem{Reason: ReasonAnotherOperatorActive}, wantInMsg: []string{"kuberay", "spoke-all"},
		},
		{
			name: "a spoke over all namespaces: it reports for the cluster, this one does not", decided: true,
			decision: Decision{Conflicts: []Conflict{spokeAll}}, wantOK: true,
			want: Problem{Reason: ReasonAnotherOperatorActive, AnotherSpokeReports: true}, wantInMsg: []string{"spoke-all"},
		},
		{
			name: "a spoke over part of an all-namespaces scope: this one still reports", decided: true,
			decision: Decision{Conflicts: []Conflict{spokeA}}, wantOK: true,
			want: Problem{Reason: ReasonAnotherOperatorActive}, wantInMsg: []string{"spoke-a"},
		},
		{
			name: "a spoke over all of a scoped spoke's namespaces: it reports", decided: true,
			decision: Decision{Conflicts: []Conflict{spokeA}}, scope: []string{"team-a"}, wantOK: true,
			want: Problem{Reason: ReasonAnotherOperatorActive, AnotherSpokeReports: true}, wantInMsg: []string{"spoke-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(now)
			g := NewGate(clk, time.Second)
			if tt.decided {
				g.Set(tt.decision, now.Add(time.Minute))
			}
			got, ok := g.Problem(tt.scope)
			if ok != tt.wantOK || got.Reason != tt.want.Reason || got.AnotherSpokeReports != tt.want.AnotherSpokeReports {
				t.Errorf("Problem = %+v, %v; want reason %q, another spoke reports %v, ok %v",
					got, ok, tt.want.Reason, tt.want.AnotherSpokeReports, tt.wantOK)
			}
			for _, s := range tt.wantInMsg {
				if !strings.Contains(got.Message, s) {
					t.Errorf("Problem message %q does not mention %q", got.Message, s)
				}
			}
		})
	}
}
