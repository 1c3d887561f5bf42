package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// asPluginEnv makes the test binary run main, so that a test can install it as the kubectl
// plugin kubectl-rayfleet and let a real kubectl run it.
const asPluginEnv = "RAYFLEET_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asPluginEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

func TestDisplayName(t *testing.T) {
	for argv0, want := range map[string]string{
		"rayfleet":                        "rayfleet",
		"/usr/local/bin/rayfleet":         "rayfleet",
		"/usr/local/bin/kubectl-rayfleet": "kubectl rayfleet",
		"/opt/bin/kubectl-rayfleet.exe":   "kubectl rayfleet",
		"kubectl-ray_fleet":               "kubectl ray-fleet",
		"kubectl-":                        "rayfleet",
	} {
		if got := displayName(argv0); got != want {
			t.Errorf("displayName(%q) = %q, want %q", argv0, got, want)
		}
	}
}

// TestKubectlPlugin runs the CLI as kubectl runs plugins: kubectl-rayfleet found on PATH, for
// `kubectl rayfleet ...`, with kubectl's exit code being the plugin's.
func TestKubectlPlugin(t *testing.T) {
	kubectl := kubectlPath(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "kubectl-rayfleet")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "version", args: []string{"version"}, wantStdout: version + "\n"},
		{name: "help", args: []string{"--help"}, wantStdout: "Usage: kubectl rayfleet <command> [flags]\n"},
		{name: "help lists the commands", args: []string{"--help"}, wantStdout: "\n  rollout   Show and steer a RayService's rollout"},
		{name: "a command's usage", args: []string{"rollout", "status", "-h"}, wantStdout: "Usage: kubectl rayfleet rollout status <namespace>/<name> [flags]"},
		{name: "usage error", args: []string{"rollout", "undo"}, wantCode: 2, wantStderr: "kubectl rayfleet rollout undo: the RayService is required"},
		{name: "completion", args: []string{"completion", "bash"}, wantStdout: "# bash completion V2 for rayfleet"},
		{name: "connection flags before the command", args: []string{"--kubeconfig", "/nonexistent/kubeconfig", "--insecure-skip-tls-verify", "status"},
			wantCode: 1, wantStderr: "kubectl rayfleet status: loading the hub's kubeconfig: stat /nonexistent/kubeconfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), kubectl, append([]string{"rayfleet"}, tt.args...)...)
			cmd.Env = []string{"PATH=" + dir, "HOME=" + t.TempDir(), asPluginEnv + "=1"}
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				var exitErr *exec.ExitError
				if !errors.As(err, &exitErr) {
					t.Fatalf("running kubectl: %v", err)
				}
				code = exitErr.ExitCode()
			}
			if code != tt.wantCode || !strings.Contains(stdout.String(), tt.wantStdout) || !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("kubectl rayfleet %v: code %d, stdout %q, stderr %q; want code %d, stdout with %q, stderr with %q",
					tt.args, code, stdout.String(), stderr.String(), tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

// kubectlPath finds kubectl where the envtest binaries are: $KUBEBUILDER_ASSETS, else the
// repository's bin/k8s (`make tools`).
func kubectlPath(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := envtest.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	path := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("kubectl not found in %s: run `make tools`", dir)
	}
	return path
}
