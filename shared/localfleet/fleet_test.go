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
		{
			name: "traffic with a serve IP per member",
			opts: Options{Members: []MemberSpec{{Name: "us"}, {Name: "eu"}}, Traffic: &TrafficOptions{ServeIPs: map[string]string{"us": "10.99.0.1", "eu": "10.99.0.2"}}},
			check: func(t *testing.T, o Options) {
				if o.Traffic.GatewayPort != 0 {
					t.Errorf("gateway port %d, want 0 (picked at start)", o.Traffic.GatewayPort)
				}
			},
		},
		{
			name:    "traffic without a member's serve IP",
			opts:    Options{Members: []MemberSpec{{Name: "us"}, {Name: "eu"}}, Traffic: &TrafficOptions{ServeIPs: map[string]string{"us": "10.99.0.1"}}},
			wantErr: "no serve IP for member eu",
		},
		{
			name:    "traffic with a serve IP that is not one",
			opts:    Options{Members: []MemberSpec{{Name: "us"}}, Traffic: &TrafficOptions{ServeIPs: map[string]string{"us": "us.example"}}},
			wantErr: "not an IP address",
		},
		{
			name:    "traffic with two members on one serve IP",
			opts:    Options{Members: []MemberSpec{{Name: "us"}, {Name: "eu"}}, Traffic: &TrafficOptions{ServeIPs: map[string]string{"us": "127.0.0.1", "eu": "127.0.0.1"}}},
			wantErr: "share serve IP 127.0.0.1",
		},
		{
			name:    "traffic with a gateway port out of range",
			opts:    Options{Traffic: &TrafficOptions{GatewayPort: 70000}},
			wantErr: "gateway port 70000 out of range",
		},
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
