package features

import (
	"strings"
	"testing"

	"k8s.io/component-base/featuregate"
)

func TestGatesSet(t *testing.T) {
	tests := []struct {
		name    string
		value   string
		wantErr string // substring of the error; empty for none
		want    string // String() after Set
	}{
		{name: "empty", value: "", want: ""},
		{name: "honoured gate on", value: "RayServiceIncrementalUpgrade=true", want: "RayServiceIncrementalUpgrade=true"},
		{
			name:  "all honoured gates on, spaces tolerated",
			value: "RayMultiHostIndexing=true, RayClusterStatusConditions=true,RayServiceIncrementalUpgrade=true",
			want:  "RayClusterStatusConditions=true,RayMultiHostIndexing=true,RayServiceIncrementalUpgrade=true",
		},
		{name: "status conditions off", value: "RayClusterStatusConditions=false", wantErr: "cannot set feature gate RayClusterStatusConditions to false, feature is locked to true"},
		{name: "multi-host indexing off", value: "RayMultiHostIndexing=false", wantErr: "cannot set feature gate RayMultiHostIndexing to false, feature is locked to true"},
		{name: "incremental upgrade off", value: "RayServiceIncrementalUpgrade=false", wantErr: "cannot set feature gate RayServiceIncrementalUpgrade to false, feature is locked to true"},
		// The spoke does not reconcile RayJobs, so KubeRay's RayJob gates mean nothing to it.
		{name: "RayJob deletion policy", value: "RayJobDeletionPolicy=true", wantErr: "unrecognized feature gate: RayJobDeletionPolicy"},
		{name: "RayCronJob", value: "RayCronJob=true", wantErr: "unrecognized feature gate: RayCronJob"},
		{name: "async job info", value: "AsyncJobInfoQuery=false", wantErr: "unrecognized feature gate: AsyncJobInfoQuery"},
		{name: "typo", value: "RayServiceIncrementalUpgrades=true", wantErr: "unrecognized feature gate: RayServiceIncrementalUpgrades"},
		{name: "missing value", value: "RayMultiHostIndexing", wantErr: "missing bool value for RayMultiHostIndexing"},
		{name: "not a bool", value: "RayMultiHostIndexing=yes", wantErr: "invalid value of RayMultiHostIndexing=yes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := New()
			err := g.Set(tt.value)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Set(%q) = %v, want no error", tt.value, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Set(%q) = %v, want an error containing %q", tt.value, err, tt.wantErr)
			case tt.wantErr != "":
				return
			}
			if got := g.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestGatesEnabled(t *testing.T) {
	// Whatever was asked for, every gate the spoke knows is on: it has no code path without it.
	for _, value := range []string{"", "RayServiceIncrementalUpgrade=true"} {
		g := New()
		if err := g.Set(value); err != nil {
			t.Fatalf("Set(%q): %v", value, err)
		}
		for _, name := range Names() {
			if !g.Enabled(featuregate.Feature(name)) {
				t.Errorf("after Set(%q), %s is off, want on", value, name)
			}
		}
	}
}

func TestNamesAndUsage(t *testing.T) {
	want := []string{"RayClusterStatusConditions", "RayMultiHostIndexing", "RayServiceIncrementalUpgrade"}
	got := Names()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		if !strings.Contains(Usage(), name) {
			t.Errorf("Usage() does not name %s: %q", name, Usage())
		}
	}
	var zero *Gates
	if zero.String() != "" {
		t.Errorf("String() of a nil *Gates = %q, want empty", zero.String())
	}
}
