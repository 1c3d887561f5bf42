package rayservice

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/rayfleet/rayfleet/shared/names"
)

func TestExportNames(t *testing.T) {
	long := strings.Repeat("r", 60)
	tests := []struct {
		name, rayService, member string
		want                     []exportName
	}{
		{name: "no export asked for", rayService: "svc"},
		{name: "the current name, then the legacy one", rayService: "svc", member: "ap",
			want: []exportName{{name: names.ServeExport("svc", "ap")}, {name: "svc-serve-ap", legacy: true}}},
		{name: "long names: both bounded and distinct", rayService: long, member: "eu-west",
			want: []exportName{{name: names.ServeExport(long, "eu-west")}, {name: names.LegacyServeExport(long, "eu-west"), legacy: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := exportNames(tt.rayService, tt.member)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(exportName{})); diff != "" {
				t.Errorf("exportNames(%q, %q) (-want +got):\n%s", tt.rayService, tt.member, diff)
			}
			for _, e := range got {
				if len(e.name) > 63 {
					t.Errorf("%q is longer than a Service name may be", e.name)
				}
			}
		})
	}
	// The names two RayServices of one namespace once shared are now apart; their legacy
	// names still collide, which is why the hub prefers the current one.
	a, b := exportNames("x-serve", "y"), exportNames("x", "serve-y")
	if a[0].name == b[0].name {
		t.Errorf("x-serve on y and x on serve-y share the export %q", a[0].name)
	}
	if a[1].name != b[1].name {
		t.Errorf("legacy names %q and %q differ; the test no longer shows the ambiguity", a[1].name, b[1].name)
	}
}
