package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/devfleet"
)

// TestDev runs the dev commands that start nothing: help, usage errors, a preflight that fails,
// and down and status with no fleet.
func TestDev(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "state")
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "help", args: []string{"dev", "--help"}, wantCode: 0, wantStdout: "Commands:"},
		{name: "unknown command", args: []string{"dev", "frobnicate"}, wantCode: 2, wantStderr: `unknown command "frobnicate"`},
		{name: "up help", args: []string{"dev", "up", "-h"}, wantCode: 0, wantStdout: "-base-port"},
		{name: "up help on traffic", args: []string{"dev", "up", "-h"}, wantCode: 0, wantStdout: "-traffic"},
		{name: "up positional argument", args: []string{"dev", "up", "now"}, wantCode: 2, wantStderr: "unexpected arguments: now"},
		{
			name:       "up without tools",
			args:       []string{"dev", "up", "--state-dir", empty, "--k8s-bin", "/nonexistent/k8s", "--bin", "/nonexistent/bin"},
			wantCode:   1,
			wantStderr: "kube-apiserver not found in /nonexistent/k8s: run `make tools`",
		},
		{
			name:       "up without agents",
			args:       []string{"dev", "up", "--state-dir", empty, "--k8s-bin", "/nonexistent/k8s", "--bin", "/nonexistent/bin"},
			wantCode:   1,
			wantStderr: "hub not found in /nonexistent/bin: run `make build`",
		},
		{
			name:       "up with traffic without traefik",
			args:       []string{"dev", "up", "--traffic", "--state-dir", empty, "--k8s-bin", "/nonexistent/k8s", "--bin", "/nonexistent/bin"},
			wantCode:   1,
			wantStderr: "traefik not found in /nonexistent/k8s: run `make tools`",
		},
		{name: "up help on ray", args: []string{"dev", "up", "-h"}, wantCode: 0, wantStdout: "-ray"},
		{
			name:       "up with ray implies traffic and real Nodes",
			args:       []string{"dev", "up", "--ray", "--state-dir", empty, "--k8s-bin", "/nonexistent/k8s", "--bin", "/nonexistent/bin"},
			wantCode:   1,
			wantStderr: "traefik not found in /nonexistent/k8s: run `make tools`",
		},
		{
			name:       "up with ray without the Ray image",
			args:       []string{"dev", "up", "--ray", "--state-dir", empty, "--k8s-bin", "/nonexistent/k8s", "--bin", "/nonexistent/bin"},
			wantCode:   1,
			wantStderr: "/nonexistent/bin/images/ray.tar: no such file or directory: run `make ray-image`",
		},
		{name: "down with nothing running", args: []string{"dev", "down", "--state-dir", empty}, wantCode: 0, wantStdout: "No dev fleet is running"},
		{name: "status with nothing running", args: []string{"dev", "status", "--state-dir", empty}, wantCode: 1, wantStdout: "No dev fleet is running"},
		{name: "status help", args: []string{"dev", "status", "-h"}, wantCode: 0, wantStdout: "Exit code 0 when"},
		{name: "supervise usage error", args: []string{"dev", "supervise", "extra"}, wantCode: 2, wantStderr: "unexpected arguments: extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stdout %q, stderr %q)", code, tt.wantCode, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestSupervisorArgs(t *testing.T) {
	base := devfleet.Config{StateDir: "/state", BasePort: 16443, K8sBin: "/k8s", Bin: "/bin", Root: "/clone"}
	withTraffic := base
	withTraffic.Traffic = true
	withRealNodes := base
	withRealNodes.RealNodes = true
	withRay := base
	withRay.Ray, withRay.Traffic, withRay.RealNodes = true, true, true
	tests := []struct {
		name string
		c    devfleet.Config
		want string
	}{
		{name: "plain", c: base, want: "dev supervise --state-dir /state --base-port 16443 --k8s-bin /k8s --bin /bin --root /clone"},
		{name: "traffic passed on", c: withTraffic, want: "dev supervise --state-dir /state --base-port 16443 --k8s-bin /k8s --bin /bin --root /clone --traffic"},
		{name: "real nodes passed on", c: withRealNodes, want: "dev supervise --state-dir /state --base-port 16443 --k8s-bin /k8s --bin /bin --root /clone --real-nodes"},
		{name: "ray passed on", c: withRay, want: "dev supervise --state-dir /state --base-port 16443 --k8s-bin /k8s --bin /bin --root /clone --traffic --real-nodes --ray"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(supervisorArgs(tt.c), " "); got != tt.want {
				t.Errorf("supervisorArgs = %q, want %q", got, tt.want)
			}
		})
	}
}
