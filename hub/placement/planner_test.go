package placement

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rayfleet/rayfleet/shared/conditions"
)

func TestPlan(t *testing.T) {
	cpu4 := rl("cpu", "4", "memory", "8Gi")
	tests := []struct {
		name string
		in   Input
		want Decision
	}{
		{
			name: "zero members",
			in:   Input{Demand: cpu4, Policy: BuiltInPolicy()},
			want: Decision{Message: "0/1 clusters chosen; the fleet has no member clusters"},
		},
		{
			name: "clusters below 1 means one",
			in: Input{Demand: cpu4, Policy: Policy{Clusters: 0},
				Members: members(member("m1", "cpu", "8", "memory", "16Gi"))},
			want: Decision{Clusters: []string{"m1"}, Placed: true, Message: "1/1 clusters chosen"},
		},
		{
			name: "ties go by name",
			in: Input{Demand: cpu4, Policy: Policy{Clusters: 2}, Members: members(
				member("m3", "cpu", "8", "memory", "16Gi"),
				member("m1", "cpu", "8", "memory", "16Gi"),
				member("m2", "cpu", "8", "memory", "16Gi"),
			)},
			want: Decision{Clusters: []string{"m1", "m2"}, Placed: true, Message: "2/2 clusters chosen"},
		},
		{
			name: "the most room left wins",
			in: Input{Demand: cpu4, Policy: BuiltInPolicy(), Members: members(
				member("a", "cpu", "5", "memory", "9Gi"),
				member("b", "cpu", "64", "memory", "256Gi"),
				member("c", "cpu", "16", "memory", "32Gi"),
			)},
			want: Decision{Clusters: []string{"b"}, Placed: true, Message: "1/1 clusters chosen"},
		},
		{
			name: "more clusters asked for than members: all that fit",
			in: Input{Demand: cpu4, Policy: Policy{Clusters: 5}, Members: members(
				member("m1", "cpu", "8", "memory", "16Gi"),
				member("m2", "cpu", "8", "memory", "16Gi"),
				member("m3", "cpu", "8", "memory", "16Gi"),
			)},
			want: Decision{Clusters: []string{"m1", "m2", "m3"},
				Message: "3/5 clusters chosen; the fleet has only 3 member clusters"},
		},
		{
			name: "insufficient capacity: what fits is chosen, every rejection listed by name",
			in: Input{Demand: rl("cpu", "4", "nvidia.com/gpu", "8"), Policy: Policy{Clusters: 3}, Members: members(
				member("m4", "cpu", "64", "nvidia.com/gpu", "16").notReady(""),
				member("m2", "cpu", "64", "nvidia.com/gpu", "8"),
				member("m3", "cpu", "64", "nvidia.com/gpu", "2"),
				member("m1", "cpu", "64", "nvidia.com/gpu", "16"),
			)},
			want: Decision{
				Clusters: []string{"m1", "m2"},
				Message:  "2/3 clusters chosen; m3: insufficient nvidia.com/gpu (need 8, free 2); m4: not ready",
				Rejected: map[string]string{"m3": "insufficient nvidia.com/gpu (need 8, free 2)", "m4": "not ready"},
			},
		},
		{
			name: "every short resource is named; a missing resource has none free",
			in: Input{Demand: rl("cpu", "4", "memory", "8Gi", "nvidia.com/gpu", "1"), Policy: BuiltInPolicy(),
				Members: members(member("m1", "cpu", "2", "memory", "4Gi"))},
			want: Decision{
				Message: "0/1 clusters chosen; m1: insufficient cpu (need 4, free 2), insufficient memory (need 8Gi, free 4Gi), " +
					"insufficient nvidia.com/gpu (need 1, free 0)",
				Rejected: map[string]string{"m1": "insufficient cpu (need 4, free 2), insufficient memory (need 8Gi, free 4Gi), " +
					"insufficient nvidia.com/gpu (need 1, free 0)"},
			},
		},
		{
			name: "not ready reason is shown",
			in: Input{Demand: cpu4, Policy: BuiltInPolicy(),
				Members: members(member("m1", "cpu", "8", "memory", "16Gi").notReady("heartbeat 2m old"))},
			want: Decision{Message: "0/1 clusters chosen; m1: heartbeat 2m old",
				Rejected: map[string]string{"m1": "heartbeat 2m old"}},
		},
		{
			name: "selector and names filter",
			in: Input{Demand: cpu4, Policy: Policy{Clusters: 3, Selector: labels.SelectorFromSet(labels.Set{"region": "eu"}),
				Names: []string{"eu1", "us1", "eu3"}}, Members: members(
				member("eu1", "cpu", "8", "memory", "16Gi").region("eu"),
				member("eu2", "cpu", "8", "memory", "16Gi").region("eu"),
				member("us1", "cpu", "8", "memory", "16Gi").region("us"),
			)},
			want: Decision{
				Clusters: []string{"eu1"},
				Message: `1/3 clusters chosen; eu2: not in the policy's cluster names; ` +
					`us1: labels do not match selector "region=eu"`,
				Rejected: map[string]string{"eu2": "not in the policy's cluster names", "us1": `labels do not match selector "region=eu"`},
			},
		},
		{
			name: "a member that refused the copy is left out, even the roomiest or a current one",
			in: Input{Demand: cpu4, Policy: Policy{Clusters: 2}, Current: []string{"m2"},
				Refused: map[string]string{
					"big": "hubPolicy/privileged: container ray-head asks for privileged",
					"m2":  "NamespaceTerminating: namespace ns is being deleted",
				},
				Members: members(
					member("big", "cpu", "64", "memory", "256Gi"),
					member("m1", "cpu", "8", "memory", "16Gi"),
					member("m2", "cpu", "8", "memory", "16Gi"),
				)},
			want: Decision{
				Clusters: []string{"m1"},
				Message: "1/2 clusters chosen; big: refused this RayService: hubPolicy/privileged: container ray-head asks for privileged; " +
					"m2: refused this RayService: NamespaceTerminating: namespace ns is being deleted",
				Rejected: map[string]string{
					"big": "refused this RayService: hubPolicy/privileged: container ray-head asks for privileged",
					"m2":  "refused this RayService: NamespaceTerminating: namespace ns is being deleted",
				},
			},
		},
		{
			name: "a member not granted to the namespace gets no new copy; a current one keeps it",
			in: Input{Demand: cpu4, Policy: Policy{Clusters: 2}, Current: []string{"old"},
				Ungranted: map[string]string{
					"big": "namespace ns has no NamespaceGrant for member big",
					"old": "namespace ns has no NamespaceGrant for member old",
				},
				Members: members(
					member("big", "cpu", "64", "memory", "256Gi"),
					member("m1", "cpu", "8", "memory", "16Gi"),
					member("old", "cpu", "8", "memory", "16Gi"),
				)},
			want: Decision{Clusters: []string{"m1", "old"}, Placed: true, Message: "2/2 clusters chosen",
				Rejected: map[string]string{"big": "namespace ns has no NamespaceGrant for member big"}},
		},
		{
			name: "no member granted: none chosen, each says why",
			in: Input{Demand: cpu4, Policy: BuiltInPolicy(),
				Ungranted: map[string]string{"m1": "namespace ns has no NamespaceGrant for member m1"},
				Members:   members(member("m1", "cpu", "8", "memory", "16Gi").notReady("heartbeat 2m old"))},
			want: Decision{Message: "0/1 clusters chosen; m1: namespace ns has no NamespaceGrant for member m1",
				Rejected: map[string]string{"m1": "namespace ns has no NamespaceGrant for member m1"}},
		},
		{
			name: "duplicate member names are used for neither",
			in: Input{Demand: cpu4, Policy: BuiltInPolicy(), Members: members(
				member("m1", "cpu", "64", "memory", "64Gi"),
				member("m1", "cpu", "8", "memory", "16Gi"),
				member("m2", "cpu", "8", "memory", "16Gi"),
			)},
			want: Decision{Clusters: []string{"m2"}, Placed: true, Message: "1/1 clusters chosen",
				Rejected: map[string]string{"m1": "duplicate member name"}},
		},
		{
			name: "nothing asked for: cpu and memory room decide",
			in: Input{Policy: BuiltInPolicy(), Members: members(
				member("a", "cpu", "8", "memory", "16Gi"),
				member("b", "cpu", "32", "memory", "64Gi"),
			)},
			want: Decision{Clusters: []string{"b"}, Placed: true, Message: "1/1 clusters chosen"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := diffDecision(tt.want, Plan(tt.in)); diff != "" {
				t.Errorf("Plan() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanSpread(t *testing.T) {
	// eu-big has the most room, eu-2 the next; without spreading both would be chosen.
	fleet := members(
		member("eu-big", "cpu", "64").region("eu"),
		member("eu-2", "cpu", "48").region("eu"),
		member("us-1", "cpu", "16").region("us"),
		member("ap-1", "cpu", "8").region("ap"),
		member("nolabel", "cpu", "40"),
	)
	tests := []struct {
		name     string
		clusters int
		spreadBy string
		current  []string
		want     []string
	}{
		{name: "no spread: by room", clusters: 2, want: []string{"eu-2", "eu-big"}},
		{name: "spread over regions", clusters: 2, spreadBy: "region", want: []string{"eu-big", "us-1"}},
		{name: "three regions", clusters: 3, spreadBy: "region", want: []string{"ap-1", "eu-big", "us-1"}},
		{name: "regions exhausted: then by room", clusters: 4, spreadBy: "region", want: []string{"ap-1", "eu-2", "eu-big", "us-1"}},
		{
			name: "a kept member's region counts as chosen", clusters: 2, spreadBy: "region",
			current: []string{"eu-2"}, want: []string{"eu-2", "us-1"},
		},
		{name: "unknown label key spreads over nothing", clusters: 2, spreadBy: "zone", want: []string{"eu-2", "eu-big"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Plan(Input{Demand: rl("cpu", "1"), Members: fleet, Current: tt.current,
				Policy: Policy{Clusters: tt.clusters, SpreadBy: tt.spreadBy}})
			if !slices.Equal(got.Clusters, tt.want) || !got.Placed {
				t.Errorf("Plan() = %v (placed %t), want %v placed", got.Clusters, got.Placed, tt.want)
			}
		})
	}
}

func TestPlanStickiness(t *testing.T) {
	gpu := rl("cpu", "4", "nvidia.com/gpu", "4")
	tests := []struct {
		name    string
		current []string
		held    map[string][]string
		fleet   []*memberWrapper
		count   int
		want    []string
	}{
		{
			name:    "current kept although another has more room",
			current: []string{"small"},
			fleet:   []*memberWrapper{member("small", "cpu", "8", "nvidia.com/gpu", "4"), member("big", "cpu", "64", "nvidia.com/gpu", "32")},
			want:    []string{"small"},
		},
		{
			name:    "current dropped when it no longer fits",
			current: []string{"small"},
			fleet:   []*memberWrapper{member("small", "cpu", "8", "nvidia.com/gpu", "2"), member("big", "cpu", "64", "nvidia.com/gpu", "32")},
			want:    []string{"big"},
		},
		{
			name:    "current dropped when not ready",
			current: []string{"small"},
			fleet:   []*memberWrapper{member("small", "cpu", "8", "nvidia.com/gpu", "8").notReady("heartbeat 2m old"), member("big", "cpu", "64", "nvidia.com/gpu", "32")},
			want:    []string{"big"},
		},
		{
			name:    "what the copy holds is added back: a full member still fits its own copy",
			current: []string{"full"},
			held:    map[string][]string{"full": {"cpu", "4", "nvidia.com/gpu", "4"}, "big": {"nvidia.com/gpu", "100"}},
			fleet:   []*memberWrapper{member("full", "cpu", "1", "nvidia.com/gpu", "0"), member("big", "cpu", "64", "nvidia.com/gpu", "2")},
			want:    []string{"full"},
		},
		{
			name:  "held is credited only to current members",
			held:  map[string][]string{"full": {"cpu", "4", "nvidia.com/gpu", "4"}},
			fleet: []*memberWrapper{member("full", "cpu", "1", "nvidia.com/gpu", "0"), member("big", "cpu", "64", "nvidia.com/gpu", "8")},
			want:  []string{"big"},
		},
		{
			name:    "current replaced by a new one when one of two is lost",
			current: []string{"a", "b"},
			count:   2,
			fleet: []*memberWrapper{member("a", "cpu", "8", "nvidia.com/gpu", "4"), member("b", "cpu", "8", "nvidia.com/gpu", "4").notReady(""),
				member("c", "cpu", "16", "nvidia.com/gpu", "8"), member("d", "cpu", "64", "nvidia.com/gpu", "32")},
			want: []string{"a", "d"},
		},
		{
			name:    "fewer clusters asked for: the best current members stay",
			current: []string{"a", "b", "c"},
			count:   2,
			fleet: []*memberWrapper{member("a", "cpu", "8", "nvidia.com/gpu", "4"), member("b", "cpu", "64", "nvidia.com/gpu", "32"),
				member("c", "cpu", "16", "nvidia.com/gpu", "8"), member("d", "cpu", "128", "nvidia.com/gpu", "64")},
			want: []string{"b", "c"},
		},
		{
			name:    "current members that left the fleet are ignored",
			current: []string{"gone"},
			fleet:   []*memberWrapper{member("a", "cpu", "8", "nvidia.com/gpu", "4")},
			want:    []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			held := map[string]corev1.ResourceList{}
			for name, pairs := range tt.held {
				held[name] = rl(pairs...)
			}
			got := Plan(Input{Demand: gpu, Policy: Policy{Clusters: max(tt.count, 1)}, Members: members(tt.fleet...),
				Current: tt.current, Held: held})
			if !slices.Equal(got.Clusters, tt.want) || !got.Placed {
				t.Errorf("Plan() = %v (placed %t, %s), want %v placed", got.Clusters, got.Placed, got.Message, tt.want)
			}
		})
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	var fleet []Member
	for i := range 40 {
		w := member(string(rune('a'+i%26))+strings.Repeat("x", i/26), "cpu", []string{"8", "16", "32"}[i%3], "nvidia.com/gpu", "8").
			region([]string{"eu", "us", "ap", "sa"}[i%4])
		if i%7 == 0 {
			w.notReady("")
		}
		fleet = append(fleet, w.obj())
	}
	in := Input{Demand: rl("cpu", "4", "nvidia.com/gpu", "2"), Policy: Policy{Clusters: 6, SpreadBy: "region"},
		Members: fleet, Current: []string{"c", "h"}}
	want := Plan(in)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		shuffled := slices.Clone(fleet)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		in.Members = shuffled
		if diff := diffDecision(want, Plan(in)); diff != "" {
			t.Fatalf("Plan() differs after shuffling (-first +now):\n%s", diff)
		}
	}
}

func TestMessageIsTruncated(t *testing.T) {
	var fleet []Member
	for i := range 2000 {
		fleet = append(fleet, member(fmt.Sprintf("member-with-a-rather-long-name-%04d", i)).
			notReady("heartbeat 10m old, last error: connection refused").obj())
	}
	got := Plan(Input{Policy: BuiltInPolicy(), Members: fleet})
	if len(got.Message) > conditions.MaxMessageLength {
		t.Fatalf("message is %d bytes, want at most %d", len(got.Message), conditions.MaxMessageLength)
	}
	shown := strings.Count(got.Message, "; member-")
	var more int
	if _, err := fmt.Sscanf(got.Message[strings.LastIndex(got.Message, "; and ")+2:], "and %d more", &more); err != nil {
		t.Fatalf("message does not end with how many were left out: ...%s", got.Message[len(got.Message)-80:])
	}
	if shown == 0 || shown+more != 2000 || len(got.Rejected) != 2000 {
		t.Errorf("message shows %d rejections and %d more, want 2000 in all (%d in Rejected)", shown, more, len(got.Rejected))
	}
	if !strings.HasPrefix(got.Message, "0/1 clusters chosen; member-with-a-rather-long-name-0000: heartbeat") {
		t.Errorf("message starts %q, want the rejections in name order", got.Message[:80])
	}
}
