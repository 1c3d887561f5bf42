package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun checks the command line of the thin main: help is not an error, and what fails
// before the manager starts says why.
func TestRun(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing-kubeconfig")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "help", args: []string{"--help"}},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: "parsing flags"},
		{name: "bad duration", args: []string{"--resync=soon"}, wantErr: "parsing flags"},
		{name: "kubeconfig that does not load", args: []string{"--kubeconfig=" + missing}, wantErr: "loading kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := run(context.Background(), tt.args)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("run(%v) = %v, want nil", tt.args, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("run(%v) = %v, want an error containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}
