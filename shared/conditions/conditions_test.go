package conditions

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	t0 = metav1.NewTime(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func TestTruncate(t *testing.T) {
	ascii := strings.Repeat("x", MaxMessageLength)
	tests := []struct {
		name string
		msg  string
		want string
	}{
		{name: "empty", msg: "", want: ""},
		{name: "short multi-byte message is kept", msg: "héllo ✓", want: "héllo ✓"},
		{name: "exactly the limit is kept", msg: ascii, want: ascii},
		{name: "one byte over is cut to the limit", msg: ascii + "y", want: ascii},
		// "é" is 2 bytes; it starts at the last byte allowed.
		{name: "2-byte character straddling the limit is dropped whole",
			msg: ascii[:MaxMessageLength-1] + "é" + "tail", want: ascii[:MaxMessageLength-1]},
		// "✓" is 3 bytes; it starts 2 bytes before the limit.
		{name: "3-byte character straddling the limit is dropped whole",
			msg: ascii[:MaxMessageLength-2] + "✓" + "tail", want: ascii[:MaxMessageLength-2]},
		// "😀" is 4 bytes; it starts 3 bytes before the limit.
		{name: "4-byte character straddling the limit is dropped whole",
			msg: ascii[:MaxMessageLength-3] + "😀" + "tail", want: ascii[:MaxMessageLength-3]},
		{name: "character ending exactly at the limit is kept",
			msg: ascii[:MaxMessageLength-2] + "é" + "tail", want: ascii[:MaxMessageLength-2] + "é"},
		{name: "invalid UTF-8 without a character start nearby is cut at the limit",
			msg: strings.Repeat("\x80", MaxMessageLength+10), want: strings.Repeat("\x80", MaxMessageLength)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.msg)
			if got != tt.want {
				t.Errorf("Truncate = %d bytes ending %q, want %d bytes ending %q",
					len(got), tail(got), len(tt.want), tail(tt.want))
			}
			if utf8.ValidString(tt.msg) && !utf8.ValidString(got) {
				t.Errorf("Truncate tore a character: ends %q", tail(got))
			}
		})
	}
}

func TestTruncateManyMultiByte(t *testing.T) {
	// Whatever the offset, a message of multi-byte characters is cut on a boundary.
	for pad := range 4 {
		msg := strings.Repeat("x", pad) + strings.Repeat("😀", MaxMessageLength/4+2)
		got := Truncate(msg)
		if len(got) > MaxMessageLength || len(got) < MaxMessageLength-3 || !utf8.ValidString(got) {
			t.Errorf("pad %d: %d bytes, valid UTF-8 %v; want within 3 bytes under %d and valid",
				pad, len(got), utf8.ValidString(got), MaxMessageLength)
		}
	}
}

func tail(s string) string {
	return s[max(len(s)-6, 0):]
}

func TestJoin(t *testing.T) {
	long := strings.Repeat("p", 10000)
	tests := []struct {
		name     string
		head     string
		parts    []string
		want     string
		wantLen  int
		wantTail string
	}{
		{name: "head alone", head: "0/1 chosen", want: "0/1 chosen"},
		{name: "parts in order", head: "h", parts: []string{"b: x", "a: y"}, want: "h; b: x; a: y"},
		{name: "what does not fit is counted", head: "h", parts: []string{long, long, long, long, long},
			want: "h; " + long + "; " + long + "; " + long + "; and 2 more"},
		{name: "a single overlong part is counted", head: "h", parts: []string{strings.Repeat("p", MaxMessageLength)},
			want: "h; and 1 more"},
		{name: "an overlong head is truncated", head: strings.Repeat("é", MaxMessageLength), parts: []string{"a"},
			wantLen: MaxMessageLength, wantTail: "éé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Join(tt.head, tt.parts...)
			if len(got) > MaxMessageLength || !utf8.ValidString(got) {
				t.Fatalf("Join = %d bytes (valid UTF-8 %v), want at most %d", len(got), utf8.ValidString(got), MaxMessageLength)
			}
			if tt.want != "" && got != tt.want {
				t.Errorf("Join = %d bytes ending %q, want %d bytes ending %q", len(got), tail(got), len(tt.want), tail(tt.want))
			}
			if tt.wantLen != 0 && (len(got) != tt.wantLen || !strings.HasSuffix(got, tt.wantTail)) {
				t.Errorf("Join = %d bytes ending %q, want %d ending %q", len(got), tail(got), tt.wantLen, tt.wantTail)
			}
		})
	}
}

func TestJoinFillsUpToTheLimit(t *testing.T) {
	// Many small parts: as many as fit are shown, and shown + left out = all.
	parts := make([]string, 5000)
	for i := range parts {
		parts[i] = fmt.Sprintf("member-%04d: not ready", i)
	}
	got := Join("0/5000 ready", parts...)
	if len(got) > MaxMessageLength {
		t.Fatalf("Join = %d bytes, want at most %d", len(got), MaxMessageLength)
	}
	shown := strings.Count(got, "; member-")
	var more int
	if _, err := fmt.Sscanf(got[strings.LastIndex(got, "; and ")+2:], "and %d more", &more); err != nil {
		t.Fatalf("message does not end with how many were left out: %q", tail(got))
	}
	if shown+more != len(parts) || len(got) < MaxMessageLength-len("; member-0000: not ready") {
		t.Errorf("%d shown + %d more in %d bytes, want %d in all, close to the limit", shown, more, len(got), len(parts))
	}
}

func TestSet(t *testing.T) {
	ready := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Up", Message: "m",
		ObservedGeneration: 1, LastTransitionTime: t0}
	tests := []struct {
		name        string
		prev        []metav1.Condition
		set         metav1.Condition
		wantChanged bool
		want        metav1.Condition
	}{
		{name: "new condition", set: ready, wantChanged: true, want: ready},
		{name: "same condition changes nothing", prev: []metav1.Condition{ready},
			set: with(ready, func(c *metav1.Condition) { c.LastTransitionTime = t1 }), want: ready},
		{name: "new message keeps the transition time", prev: []metav1.Condition{ready},
			set:         with(ready, func(c *metav1.Condition) { c.Message, c.LastTransitionTime = "n", t1 }),
			wantChanged: true, want: with(ready, func(c *metav1.Condition) { c.Message = "n" })},
		{name: "new status moves the transition time", prev: []metav1.Condition{ready},
			set:         with(ready, func(c *metav1.Condition) { c.Status, c.LastTransitionTime = metav1.ConditionFalse, t1 }),
			wantChanged: true, want: with(ready, func(c *metav1.Condition) { c.Status, c.LastTransitionTime = metav1.ConditionFalse, t1 })},
		{name: "long message is truncated on a character boundary",
			set:         with(ready, func(c *metav1.Condition) { c.Message = strings.Repeat("x", MaxMessageLength-1) + "é" }),
			wantChanged: true, want: with(ready, func(c *metav1.Condition) { c.Message = strings.Repeat("x", MaxMessageLength-1) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conds := append([]metav1.Condition(nil), tt.prev...)
			if got := Set(&conds, tt.set); got != tt.wantChanged {
				t.Errorf("Set = %v, want %v", got, tt.wantChanged)
			}
			if d := cmp.Diff([]metav1.Condition{tt.want}, conds); d != "" {
				t.Errorf("conditions (-want +got):\n%s", d)
			}
		})
	}
}

func with(c metav1.Condition, f func(*metav1.Condition)) metav1.Condition {
	f(&c)
	return c
}

func TestMirror(t *testing.T) {
	src := []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ClustersNotReady", Message: "1/2 clusters ready; b: down",
			ObservedGeneration: 9, LastTransitionTime: t0},
		{Type: "UpgradeInProgress", Status: metav1.ConditionTrue, Reason: "Upgrading", ObservedGeneration: 9, LastTransitionTime: t0},
	}
	mirrored := metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "ClustersNotReady",
		Message: "1/2 clusters ready; b: down", ObservedGeneration: 3, LastTransitionTime: t1}
	placed := metav1.Condition{Type: "Placed", Status: metav1.ConditionTrue, Reason: "Placed", ObservedGeneration: 3, LastTransitionTime: t0}
	tests := []struct {
		name        string
		dst         []metav1.Condition
		from, to    string
		wantChanged bool
		want        []metav1.Condition
	}{
		{name: "copied under the same type, for the target's generation", dst: []metav1.Condition{placed},
			from: "Ready", to: "Ready", wantChanged: true, want: []metav1.Condition{placed, mirrored}},
		{name: "copied under a prefixed type", from: "Ready", to: "eu-westReady", wantChanged: true,
			want: []metav1.Condition{with(mirrored, func(c *metav1.Condition) { c.Type = "eu-westReady" })}},
		{name: "absent in the source leaves the target alone", dst: []metav1.Condition{placed},
			from: "Missing", to: "Ready", want: []metav1.Condition{placed}},
		{name: "unchanged status keeps the target's transition time",
			dst:  []metav1.Condition{with(mirrored, func(c *metav1.Condition) { c.Message, c.LastTransitionTime = "old", t0 })},
			from: "Ready", to: "Ready", wantChanged: true,
			want: []metav1.Condition{with(mirrored, func(c *metav1.Condition) { c.LastTransitionTime = t0 })}},
		{name: "already mirrored changes nothing",
			dst:  []metav1.Condition{mirrored},
			from: "Ready", to: "Ready", want: []metav1.Condition{mirrored}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := append([]metav1.Condition(nil), tt.dst...)
			if got := Mirror(&dst, src, tt.from, tt.to, 3, t1); got != tt.wantChanged {
				t.Errorf("Mirror = %v, want %v", got, tt.wantChanged)
			}
			if d := cmp.Diff(tt.want, dst); d != "" {
				t.Errorf("target conditions (-want +got):\n%s", d)
			}
		})
	}
}

func TestMirrorTruncates(t *testing.T) {
	src := []metav1.Condition{{Type: "Ready", Status: metav1.ConditionFalse, Reason: "R",
		Message: strings.Repeat("x", MaxMessageLength-2) + "✓"}}
	var dst []metav1.Condition
	Mirror(&dst, src, "Ready", "Ready", 1, t0)
	if got := meta.FindStatusCondition(dst, "Ready").Message; len(got) != MaxMessageLength-2 {
		t.Errorf("mirrored message has %d bytes, want %d", len(got), MaxMessageLength-2)
	}
}

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func TestSummarize(t *testing.T) {
	binary := Summary{Type: "Ready", TrueReason: "AllGood", FalseReason: "NotGood", TrueMessage: "all good"}
	ternary := binary
	ternary.UnknownReason = "Unsure"
	counted := binary
	counted.Counted = "clusters ready"

	tests := []struct {
		name   string
		s      Summary
		inputs []metav1.Condition
		want   metav1.Condition
	}{
		{name: "all True", s: binary,
			inputs: []metav1.Condition{cond("A", metav1.ConditionTrue, "r", "m"), cond("B", metav1.ConditionTrue, "r", "m")},
			want:   cond("Ready", metav1.ConditionTrue, "AllGood", "all good")},
		{name: "no inputs is True", s: binary, want: cond("Ready", metav1.ConditionTrue, "AllGood", "all good")},
		{name: "False inputs are named in input order", s: binary,
			inputs: []metav1.Condition{cond("B", metav1.ConditionFalse, "r", "b down"), cond("A", metav1.ConditionTrue, "r", "m"),
				cond("C", metav1.ConditionFalse, "r", "c down")},
			want: cond("Ready", metav1.ConditionFalse, "NotGood", "B: b down; C: c down")},
		{name: "an input without a message is named by its reason", s: binary,
			inputs: []metav1.Condition{cond("A", metav1.ConditionFalse, "Broken", "")},
			want:   cond("Ready", metav1.ConditionFalse, "NotGood", "A: Broken")},
		{name: "without an UnknownReason Unknown counts as False, in input order", s: binary,
			inputs: []metav1.Condition{cond("A", metav1.ConditionUnknown, "r", "unknown"), cond("B", metav1.ConditionFalse, "r", "down")},
			want:   cond("Ready", metav1.ConditionFalse, "NotGood", "A: unknown; B: down")},
		{name: "with an UnknownReason, False beats Unknown and is named first", s: ternary,
			inputs: []metav1.Condition{cond("A", metav1.ConditionUnknown, "r", "unknown"), cond("B", metav1.ConditionFalse, "r", "down")},
			want:   cond("Ready", metav1.ConditionFalse, "NotGood", "B: down; A: unknown")},
		{name: "Unknown beats True", s: ternary,
			inputs: []metav1.Condition{cond("A", metav1.ConditionTrue, "r", "m"), cond("B", metav1.ConditionUnknown, "r", "probing")},
			want:   cond("Ready", metav1.ConditionUnknown, "Unsure", "B: probing")},
		{name: "an empty status counts as Unknown", s: ternary,
			inputs: []metav1.Condition{cond("A", "", "r", "never set")},
			want:   cond("Ready", metav1.ConditionUnknown, "Unsure", "A: never set")},
		{name: "counted, all True", s: counted,
			inputs: []metav1.Condition{cond("a", metav1.ConditionTrue, "", ""), cond("b", metav1.ConditionTrue, "", "")},
			want:   cond("Ready", metav1.ConditionTrue, "AllGood", "2/2 clusters ready")},
		{name: "counted, some not True", s: counted,
			inputs: []metav1.Condition{cond("a", metav1.ConditionTrue, "", ""), cond("b", metav1.ConditionFalse, "", "not yet propagated")},
			want:   cond("Ready", metav1.ConditionFalse, "NotGood", "1/2 clusters ready; b: not yet propagated")},
		{name: "counted, no inputs", s: counted, want: cond("Ready", metav1.ConditionTrue, "AllGood", "0/0 clusters ready")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Summarize(tt.s, tt.inputs)); d != "" {
				t.Errorf("Summarize (-want +got):\n%s", d)
			}
		})
	}
}

func TestSummarizeLongMessageFits(t *testing.T) {
	var inputs []metav1.Condition
	for i := range 100 {
		inputs = append(inputs, cond(fmt.Sprintf("m%02d", i), metav1.ConditionFalse, "r", strings.Repeat("é", 600)))
	}
	got := Summarize(Summary{Type: "Ready", FalseReason: "NotGood", Counted: "clusters ready"}, inputs)
	if len(got.Message) > MaxMessageLength || !utf8.ValidString(got.Message) {
		t.Fatalf("message has %d bytes (valid UTF-8 %v), want at most %d", len(got.Message), utf8.ValidString(got.Message), MaxMessageLength)
	}
	if !strings.HasPrefix(got.Message, "0/100 clusters ready; m00: éé") || !strings.HasSuffix(got.Message, " more") {
		t.Errorf("message %q...%q does not open with the count and close with what was left out", got.Message[:40], tail(got.Message))
	}
}

func TestTruncateTo(t *testing.T) {
	tests := []struct {
		msg   string
		limit int
		want  string
	}{
		{msg: "short", limit: 10, want: "short"},
		{msg: "abcdef", limit: 4, want: "abcd"},
		{msg: "abcé", limit: 4, want: "abc"}, // é is 2 bytes: dropped whole
		{msg: "a😀", limit: 3, want: "a"},     // 4-byte character straddling the limit
		{msg: "é", limit: 1, want: ""},
		{msg: "abc", limit: 0, want: ""},
	}
	for _, tt := range tests {
		if got := TruncateTo(tt.msg, tt.limit); got != tt.want {
			t.Errorf("TruncateTo(%q, %d) = %q, want %q", tt.msg, tt.limit, got, tt.want)
		}
	}
}
