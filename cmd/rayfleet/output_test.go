package main

import (
	"strings"
	"testing"
)

// testStatusOutput checks status with kubectl's connection and -o flags, on the hub testStatus
// filled.
func testStatusOutput(t *testing.T, hubFile string) {
	tests := []struct {
		name         string
		args         []string
		wantCode     int
		wantStdout   string
		wantContains []string
		wantStderr   string
	}{
		{name: "kubectl's --kubeconfig", args: []string{"--kubeconfig", hubFile, "-n", "other"}, wantContains: []string{"other/big    <none>    NoClusterFits"}},
		{
			name: "names", args: []string{"--kubeconfig", hubFile, "-A", "-o", "name"},
			wantStdout: "rayservicebinding.fleet.rayfleet.io/big\nrayservicebinding.fleet.rayfleet.io/asr\nrayservicebinding.fleet.rayfleet.io/llm\n" +
				"membercluster.fleet.rayfleet.io/m1\nmembercluster.fleet.rayfleet.io/m2\n",
		},
		{
			name: "yaml", args: []string{"--hub-kubeconfig", hubFile, "-n", "other", "-o", "yaml"},
			wantContains: []string{"apiVersion: v1\nitems:\n", "kind: RayServiceBinding", "name: big", "kind: MemberCluster", "kind: List"},
		},
		{
			name: "jsonpath", args: []string{"--kubeconfig", hubFile, "-n", "serve", "-o", "jsonpath={.items[*].metadata.name}"},
			wantStdout: "asr llm m1 m2",
		},
		{
			name: "wide", args: []string{"--kubeconfig", hubFile, "-n", "other", "-o", "wide"},
			wantContains: []string{"REVISION   REASON          POLICY", "other/big    <none>    NoClusterFits", "NoClusterFits   ", "HEARTBEAT   REASON", "NODES   KUBERNETES   AGENT"},
		},
		{name: "a format no printer takes", args: []string{"--kubeconfig", hubFile, "-o", "tabular"}, wantCode: 2, wantStderr: `unable to match a printer suitable for the output format "tabular"`},
		{
			name: "two kubeconfigs", args: []string{"--kubeconfig", hubFile, "--hub-kubeconfig", "/elsewhere"}, wantCode: 2,
			wantStderr: "--hub-kubeconfig and --kubeconfig name the same thing: give one",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append([]string{"status"}, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(stderr, tt.wantStderr) {
				t.Fatalf("status: code %d, stderr %q; want code %d and %q", code, stderr, tt.wantCode, tt.wantStderr)
			}
			if tt.wantStdout != "" && stdout != tt.wantStdout {
				t.Errorf("status stdout:\n%s\nwant:\n%s", stdout, tt.wantStdout)
			}
			for _, want := range tt.wantContains {
				if !strings.Contains(stdout, want) {
					t.Errorf("status stdout:\n%s\nwant it to contain %q", stdout, want)
				}
			}
		})
	}
}

// testRolloutOutput checks rollout status and history with -o, on serve/llm as
// testStatusAndHistory placed it.
func (h *rolloutHub) testRolloutOutput(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "status as the binding", args: []string{"status", "serve/llm", "-o", "jsonpath={.kind} {.status.rollout.phase}"}, wantStdout: "RayServiceBinding AwaitingApproval"},
		{name: "bare name in -n", args: []string{"status", "llm", "-n", "serve", "-o", "name"}, wantStdout: "rayservicebinding.fleet.rayfleet.io/llm\n"},
		{
			name: "history names", args: []string{"history", "serve/llm", "-o", "name"},
			wantStdout: "controllerrevision.apps/llm-0000000001\ncontrollerrevision.apps/llm-0000000002\ncontrollerrevision.apps/llm-0000000003\n",
		},
		{name: "one revision", args: []string{"history", "serve/llm", "--revision", "2", "-o", "jsonpath={.metadata.name}"}, wantStdout: "llm-0000000002"},
		{name: "a missing revision", args: []string{"history", "serve/llm", "--revision", "4", "-o", "yaml"}, wantCode: 1, wantStderr: "has no revision 4"},
		{name: "watch takes no -o", args: []string{"status", "serve/llm", "-w", "-o", "yaml"}, wantCode: 2, wantStderr: "--watch prints the rollout as a table"},
		{name: "-n against the target's namespace", args: []string{"status", "serve/llm", "-n", "other"}, wantCode: 2, wantStderr: "-n other and the namespace serve"},
		{name: "status has no wide table", args: []string{"status", "serve/llm", "-o", "wide"}, wantCode: 2, wantStderr: `output format "wide"`},
		{name: "pause takes no -o", args: []string{"pause", "serve/llm", "-o", "yaml"}, wantCode: 2, wantStderr: "flag provided but not defined: -o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := h.run(t, tt.args...)
			if code != tt.wantCode || stdout != tt.wantStdout || !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("rollout %v: code %d, stdout %q, stderr %q; want code %d, stdout %q, stderr with %q",
					tt.args, code, stdout, stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}

// testCompletion checks that the shell completion of a rollout command's target lists the
// RayServices RayFleet places on the hub (serve/bare and serve/llm by now).
func (h *rolloutHub) testCompletion(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "every namespace", args: []string{"rollout", "status", "--hub-kubeconfig", h.file, ""}, want: "serve/bare\nserve/llm\n:4\n"},
		{name: "a prefix", args: []string{"rollout", "undo", "--kubeconfig", h.file, "serve/l"}, want: "serve/llm\n:4\n"},
		{name: "in -n", args: []string{"rollout", "pause", "--hub-kubeconfig", h.file, "-n", "serve", "b"}, want: "bare\n:4\n"},
		{name: "one target only", args: []string{"rollout", "pause", "--hub-kubeconfig", h.file, "serve/llm", ""}, want: ":4\n"},
		{name: "no hub", args: []string{"rollout", "status", "--hub-kubeconfig", "/nonexistent", ""}, want: ":5\n"},
		{name: "-n", args: []string{"rollout", "history", "--hub-kubeconfig", h.file, "-n", "se"}, want: "serve\n:4\n"},
		{name: "status's -n", args: []string{"status", "--hub-kubeconfig", h.file, "--namespace", "kube-p"}, want: "kube-public\n:4\n"},
		{name: "connection flags before the command", args: []string{"--kubeconfig", h.file, "-n", "serve", "rollout", "pause", "b"}, want: "bare\n:4\n"},
		{name: "-n before the command", args: []string{"--kubeconfig", h.file, "-n", "kube-p"}, want: "kube-public\n:4\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if stdout, stderr, code := runCLI(t, append([]string{"__complete"}, tt.args...)...); code != 0 || stdout != tt.want {
				t.Errorf("__complete %v: code %d, stdout %q, stderr %q; want stdout %q", tt.args, code, stdout, stderr, tt.want)
			}
		})
	}
}
