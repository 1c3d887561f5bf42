package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

func TestSumCounts(t *testing.T) {
	create := benchutil.WriteKey{Resource: "rayservices", Verb: "patch"}
	ns := benchutil.WriteKey{Resource: "namespaces", Verb: "create"}
	tests := []struct {
		name string
		in   []benchutil.WriteCounts
		want benchutil.WriteCounts
	}{
		{
			name: "none",
			want: benchutil.WriteCounts{ByKey: map[benchutil.WriteKey]int{}, Failures: map[string]int{}},
		},
		{
			name: "members add up key by key",
			in: []benchutil.WriteCounts{
				{ByKey: map[benchutil.WriteKey]int{create: 3, ns: 1}, Total: 4, BeforeSplit: 4},
				{
					ByKey: map[benchutil.WriteKey]int{create: 2, ns: 2}, Total: 4, BeforeSplit: 3, Status: 1,
					Conflicts: 1, Failed: 2, Failures: map[string]int{"namespaces create 409": 1},
				},
			},
			want: benchutil.WriteCounts{
				ByKey: map[benchutil.WriteKey]int{create: 5, ns: 3}, Total: 8, BeforeSplit: 7, Status: 1,
				Conflicts: 1, Failed: 2, Failures: map[string]int{"namespaces create 409": 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, sumCounts(tt.in)); diff != "" {
				t.Errorf("sumCounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCopyTracker(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name      string
		seen      [][2]string // RayService, member, in order
		wantPer   map[string]int
		wantOnM1  int
		wantDone  bool
		wantOfRS1 string
	}{
		{
			name:    "nothing seen",
			wantPer: map[string]int{},
		},
		{
			name:      "the first member a copy shows on is kept",
			seen:      [][2]string{{"rs-1", "m1"}, {"rs-1", "m2"}, {"rs-2", "m2"}},
			wantPer:   map[string]int{"m1": 1, "m2": 1},
			wantOnM1:  1,
			wantDone:  true,
			wantOfRS1: "m1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newCopyTracker(2)
			for i, s := range tt.seen {
				tr.seen(s[0], s[1], t0.Add(time.Duration(i)*time.Second))
			}
			if diff := cmp.Diff(tt.wantPer, tr.perMember()); diff != "" {
				t.Errorf("perMember (-want +got):\n%s", diff)
			}
			if got := tr.on("m1"); got != tt.wantOnM1 {
				t.Errorf("on(m1) = %d, want %d", got, tt.wantOnM1)
			}
			if got, _ := tr.memberOf("rs-1"); got != tt.wantOfRS1 {
				t.Errorf("memberOf(rs-1) = %q, want %q", got, tt.wantOfRS1)
			}
			select {
			case <-tr.placed.AllDone():
				if !tt.wantDone {
					t.Error("AllDone closed too early")
				}
			default:
				if tt.wantDone {
					t.Error("AllDone still open")
				}
			}
		})
	}
}

func TestReportFormatting(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"quantiles", quantiles(ms(1, 2, 3, 4)), "2ms / 4ms / 4ms / 4ms"},
		{"quantiles of nothing", quantiles(nil), "0s / 0s / 0s / 0s"},
		{"met", verdict(true, "<= 60s"), "target <= 60s: met"},
		{"missed", verdict(false, "p99 <= 1s"), "target p99 <= 1s: MISSED"},
		{"members in order", perMember(map[string]int{"member-2": 5, "member-1": 7}), "member-1 7, member-2 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %q, want %q", tt.got, tt.want)
			}
		})
	}
}
