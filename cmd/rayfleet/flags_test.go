package main

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseJoin(t *testing.T) {
	base := []string{"--member-context", "m", "--name", "m1"}
	tests := []struct {
		name    string
		args    []string
		want    *joinArgs
		wantErr string
	}{
		{
			name: "defaults",
			args: base,
			want: &joinArgs{member: clusterFlags{context: "m"}, name: "m1", hubNamespace: "rayfleet-system",
				memberNamespace: "rayfleet-system", bootstrapTokenTTL: 365 * 24 * time.Hour, hubName: "rayfleet", guardTimeout: 30 * time.Second},
		},
		{
			name: "every flag",
			args: []string{"--hub-kubeconfig", "h.yaml", "--hub-context", "h", "--member-kubeconfig", "m.yaml", "--member-context", "m",
				"--name", "eu-1", "--hub-namespace", "fleet", "--member-namespace", "ray-spoke",
				"--member-server", "https://10.0.0.1:6443", "--bootstrap-token-ttl", "720h", "--traffic-namespace", "team-a", "--traffic-namespace", "team-b", "--allow-node-ports", "--hub-name", "hub-b", "--guard-timeout", "2m"},
			want: &joinArgs{
				hub: clusterFlags{kubeconfig: "h.yaml", context: "h"}, member: clusterFlags{kubeconfig: "m.yaml", context: "m"},
				name: "eu-1", hubNamespace: "fleet", memberNamespace: "ray-spoke", memberServer: "https://10.0.0.1:6443",
				bootstrapTokenTTL: 720 * time.Hour, trafficNamespaces: stringList{"team-a", "team-b"}, allowNodePorts: true, hubName: "hub-b", guardTimeout: 2 * time.Minute,
			},
		},
		{name: "traffic in every namespace", args: append([]string{"--traffic-all-namespaces"}, base...),
			want: &joinArgs{member: clusterFlags{context: "m"}, name: "m1", hubNamespace: "rayfleet-system",
				memberNamespace: "rayfleet-system", bootstrapTokenTTL: 365 * 24 * time.Hour, hubName: "rayfleet", guardTimeout: 30 * time.Second, trafficAllNamespaces: true}},
		{name: "node ports off explicitly", args: append([]string{"--allow-node-ports=false"}, base...),
			want: &joinArgs{member: clusterFlags{context: "m"}, name: "m1", hubNamespace: "rayfleet-system",
				memberNamespace: "rayfleet-system", bootstrapTokenTTL: 365 * 24 * time.Hour, hubName: "rayfleet", guardTimeout: 30 * time.Second}},
		{name: "no name", args: []string{"--member-context", "m"}, wantErr: "--name is required"},
		{name: "name not a DNS label", args: []string{"--member-context", "m", "--name", "EU_1"}, wantErr: `--name "EU_1"`},
		{name: "bad hub namespace", args: append([]string{"--hub-namespace", "a.b"}, base...), wantErr: `--hub-namespace "a.b"`},
		{name: "bad member namespace", args: append([]string{"--member-namespace", ""}, base...), wantErr: `--member-namespace ""`},
		{name: "bad traffic namespace", args: append([]string{"--traffic-namespace", "Gate_Ways"}, base...), wantErr: `--traffic-namespace "Gate_Ways"`},
		{name: "traffic namespaces and all of them", args: append([]string{"--traffic-namespace", "team-a", "--traffic-all-namespaces"}, base...),
			wantErr: "exclude each other"},
		{name: "bad hub name", args: append([]string{"--hub-name", "a b"}, base...), wantErr: `--hub-name "a b"`},
		{name: "no member", args: []string{"--name", "m1"}, wantErr: "--member-kubeconfig or --member-context is required"},
		{name: "bootstrap token shorter than Kubernetes grants", args: append([]string{"--bootstrap-token-ttl", "9m"}, base...),
			wantErr: "--bootstrap-token-ttl must be at least 10m0s"},
		{name: "no guard timeout", args: append([]string{"--guard-timeout", "0s"}, base...), wantErr: "--guard-timeout must be positive"},
		{name: "positional", args: append(base, "extra"), wantErr: "unexpected arguments: extra"},
		{name: "unknown flag", args: append(base, "--frob"), wantErr: "flag provided but not defined: -frob"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseJoin(tt.args, io.Discard)
			checkParse(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseUnjoin(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    *unjoinArgs
		wantErr string
	}{
		{name: "hub only", args: []string{"--hub-context", "h", "--name", "m1"},
			want: &unjoinArgs{hub: clusterFlags{context: "h"}, name: "m1", hubNamespace: "rayfleet-system", memberNamespace: "rayfleet-system"}},
		{name: "with member", args: []string{"--name", "m1", "--member-kubeconfig", "m.yaml", "--hub-namespace", "fleet", "--member-namespace", "ray-spoke"},
			want: &unjoinArgs{member: clusterFlags{kubeconfig: "m.yaml"}, name: "m1", hubNamespace: "fleet", memberNamespace: "ray-spoke"}},
		{name: "bad member namespace", args: []string{"--name", "m1", "--member-namespace", "Ray_Spoke"}, wantErr: `--member-namespace "Ray_Spoke"`},
		{name: "no name", args: []string{"--hub-context", "h"}, wantErr: "--name is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseUnjoin(tt.args, io.Discard)
			checkParse(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    *statusArgs
		wantErr string
	}{
		{name: "defaults", args: nil, want: &statusArgs{}},
		{name: "namespace", args: []string{"--hub-context", "h", "-n", "serve"},
			want: &statusArgs{hub: clusterFlags{context: "h"}, namespace: "serve"}},
		{name: "long namespace", args: []string{"--namespace", "serve"}, want: &statusArgs{namespace: "serve"}},
		{name: "all namespaces", args: []string{"-A"}, want: &statusArgs{allNamespaces: true}},
		{name: "both", args: []string{"-A", "-n", "serve"}, wantErr: "-n and -A are mutually exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus(tt.args, io.Discard)
			checkParse(t, got, err, tt.want, tt.wantErr)
		})
	}
}

func checkParse[T any](t *testing.T, got *T, err error, want *T, wantErr string) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("error = %v, want one containing %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(joinArgs{}, unjoinArgs{}, statusArgs{}, rolloutArgs{}, clusterFlags{})); diff != "" {
		t.Errorf("parsed flags (-want +got):\n%s", diff)
	}
}
