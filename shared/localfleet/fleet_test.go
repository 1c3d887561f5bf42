//go:build e2e

package localfleet

import (
	"strings"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestWithDefaults(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
		check   func(*testing.T, Options)
	}{
		{
			name: "defaults filled in",
			opts: Options{Members: []MemberSpec{{Name: "us"}, {Name: "eu"}}},
			check: func(t *testing.T, o Options) {
				if o.HubNamespace != labels.DefaultHubNamespace || o.ReportInterval != DefaultReportInterval ||
					o.DashboardDeployDelay != DefaultDashboardDeployDelay || o.BinDir == "" || o.RayFleetBin == "" {
					t.Errorf("defaults not filled in: %+v", o)
				}
			},
		},
		{
			name: "given values kept",
			opts: Options{HubNamespace: "fleet", ReportInterval: time.Minute, RayFleetBin: "/opt/bin"},
			check: func(t *testing.T, o Options) {
				if o.HubNamespace != "fleet" || o.ReportInterval != time.Minute || o.RayFleetBin != "/opt/bin" {
					t.Errorf("given values overridden: %+v", o)
				}
			},
		},
		{name: "duplicate member", opts: Options{Members: []MemberSpec{{Name: "us"}, {Name: "us"}}}, wantErr: "given twice"},
		{name: "member named like the hub", opts: Options{Members: []MemberSpec{{Name: "hub"}}}, wantErr: "is the hub's"},
		{name: "member name not a DNS label", opts: Options{Members: []MemberSpec{{Name: "US_east"}}}, wantErr: "member name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withDefaults(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
}

func TestLogArgs(t *testing.T) {
	tests := []struct {
		name  string
		level string
		want  string
	}{
		{name: "the development logger's own level", want: "--zap-devel"},
		{name: "a named level", level: "error", want: "--zap-devel --zap-log-level=error"},
		{name: "a verbosity", level: "127", want: "--zap-devel --zap-log-level=127"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &Fleet{opts: Options{LogLevel: tt.level}}
			if got := strings.Join(f.logArgs(), " "); got != tt.want {
				t.Errorf("logArgs = %q, want %q", got, tt.want)
			}
		})
	}
}
