package names

import (
	"strings"
	"testing"
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
	if got := ServeExport("demo", "ap"); got != "demo-serve-ap" {
		t.Errorf("ServeExport = %q, want demo-serve-ap", got)
	}
}
