package names

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestBounded(t *testing.T) {
	long := strings.Repeat("a", 47)
	tests := []struct {
		name  string
		parts []string
		// want is the whole name, or, when hashed, the readable prefix it must start with.
		want   string
		hashed bool
	}{
		{name: "short names are joined", parts: []string{"serve", "serve", "us"}, want: "serve-serve-us"},
		{name: "exactly 63 is kept", parts: []string{strings.Repeat("b", 63)}, want: strings.Repeat("b", 63)},
		{name: "longer keeps a prefix and a hash", parts: []string{long, "serve", "member-in-eu-west"}, want: long + "-serv", hashed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Bounded(tt.parts...)
			switch {
			case tt.hashed && (len(got) != maxLabel || !strings.HasPrefix(got, tt.want)):
				t.Errorf("Bounded(%q) = %q, want 63 characters starting %q", tt.parts, got, tt.want)
			case !tt.hashed && got != tt.want:
				t.Errorf("Bounded(%q) = %q, want %q", tt.parts, got, tt.want)
			}
		})
	}
	if a, b := Bounded(long, "serve", "member-one-xxxxxxxxxxxx"), Bounded(long, "serve", "member-two-xxxxxxxxxxxx"); a == b {
		t.Errorf("two members share the shortened name %q", a)
	}
}

func TestServeExport(t *testing.T) {
	if got := LegacyServeExport("demo", "ap"); got != "demo-serve-ap" {
		t.Errorf("LegacyServeExport = %q, want demo-serve-ap", got)
	}
	long := strings.Repeat("r", 60)
	tests := []struct {
		name string
		a, b [2]string // rayService, member
	}{
		{name: "serve moved from the RayService to the member", a: [2]string{"x-serve", "y"}, b: [2]string{"x", "serve-y"}},
		{name: "a dash moved between RayService and member", a: [2]string{"demo-us", "east"}, b: [2]string{"demo", "us-east"}},
		{name: "long names differing past the readable prefix", a: [2]string{long, "member-one"}, b: [2]string{long, "member-two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := ServeExport(tt.a[0], tt.a[1]), ServeExport(tt.b[0], tt.b[1])
			if a == b {
				t.Errorf("ServeExport(%q) = ServeExport(%q) = %q", tt.a, tt.b, a)
			}
			for _, got := range []string{a, b} {
				if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
					t.Errorf("%q is not a Service name: %v", got, errs)
				}
				if got == LegacyServeExport(tt.a[0], tt.a[1]) || got == LegacyServeExport(tt.b[0], tt.b[1]) {
					t.Errorf("ServeExport %q is a legacy name", got)
				}
			}
		})
	}
	if got := ServeExport("demo", "ap"); !strings.HasPrefix(got, "demo-serve-ap-") {
		t.Errorf("ServeExport(demo, ap) = %q, want it to start demo-serve-ap-", got)
	}
}

func TestDistinct(t *testing.T) {
	long := strings.Repeat("r", 60)
	tests := []struct {
		name string
		a, b []string
	}{
		{name: "a dash moved between parts", a: []string{"team-a", "x"}, b: []string{"team", "a-x"}},
		{name: "a member's name carrying a dash", a: []string{"demo", "us-east"}, b: []string{"demo-us", "east"}},
		{name: "long parts differing past the readable prefix", a: []string{long, "member-one"}, b: []string{long, "member-two"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := Distinct(tt.a...), Distinct(tt.b...)
			if a == b {
				t.Errorf("Distinct(%q) = Distinct(%q) = %q", tt.a, tt.b, a)
			}
			for _, got := range []string{a, b} {
				if errs := validation.IsDNS1035Label(got); len(errs) > 0 {
					t.Errorf("%q is not a Service name: %v", got, errs)
				}
			}
			if Distinct(tt.a...) != a {
				t.Errorf("Distinct(%q) changed between two calls", tt.a)
			}
		})
	}
	if got := Distinct("demo", "us"); !strings.HasPrefix(got, "demo-us-") || len(got) != len("demo-us-")+hashLen {
		t.Errorf("Distinct(demo, us) = %q, want demo-us- and %d hex digits", got, hashLen)
	}
}
