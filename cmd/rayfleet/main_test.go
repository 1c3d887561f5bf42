package main

import (
	"bytes"
	"strings"
	"testing"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "no command", wantCode: 2, wantStderr: "Usage:"},
		{name: "version", args: []string{"version"}, wantCode: 0, wantStdout: version + "\n"},
		{name: "help", args: []string{"--help"}, wantCode: 0, wantStdout: "Commands:"},
		{name: "dev without a command", args: []string{"dev"}, wantCode: 2, wantStderr: "Usage: rayfleet dev <command>"},
		{name: "join help", args: []string{"join", "-h"}, wantCode: 0, wantStdout: fleetv1alpha1.KubeconfigSecretLabel + "=true"},
		{name: "join usage error", args: []string{"join", "m1"}, wantCode: 2, wantStderr: "unexpected arguments: m1"},
		{name: "status usage error", args: []string{"status", "-n", "a", "-A"}, wantCode: 2, wantStderr: "mutually exclusive"},
		{name: "status unreachable", args: []string{"status", "--hub-kubeconfig", "/nonexistent/kubeconfig"}, wantCode: 1, wantStderr: "rayfleet status: loading the hub's kubeconfig"},
		{name: "unknown", args: []string{"frobnicate"}, wantCode: 2, wantStderr: `unknown command "frobnicate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
			if tt.wantStdout == "" && stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}
