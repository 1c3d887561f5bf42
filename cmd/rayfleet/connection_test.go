package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConnectionFlagsAnywhere covers kubectl's connection flags before the command, between a
// group and its command, and after it, as kubectl plugins take them.
func TestConnectionFlagsAnywhere(t *testing.T) {
	hubH := clusterFlags{kubeconfig: "h.yaml", context: "h"}
	statusTests := []struct {
		name string
		argv []string
		want statusArgs
	}{
		{name: "before", argv: []string{"--kubeconfig", "h.yaml", "--context=h", "-n", "serve", "status"},
			want: statusArgs{hub: hubH, namespace: "serve"}},
		{name: "after", argv: []string{"status", "--kubeconfig", "h.yaml", "--context", "h", "--namespace=serve"},
			want: statusArgs{hub: hubH, namespace: "serve"}},
		{name: "around", argv: []string{"--kubeconfig=h.yaml", "status", "-A", "--context", "h"},
			want: statusArgs{hub: hubH, allNamespaces: true}},
		// A boolean flag takes no value: the command after it is not read as one.
		{name: "boolean before", argv: []string{"--insecure-skip-tls-verify", "status", "--hub-context", "h"},
			want: statusArgs{hub: clusterFlags{context: "h"}}},
		{name: "alias and flag naming the same", argv: []string{"--context", "h", "status", "--hub-context", "h"},
			want: statusArgs{hub: clusterFlags{context: "h"}}},
	}
	for _, tt := range statusTests {
		t.Run("status "+tt.name, func(t *testing.T) {
			got, err := parseStatusLine(tt.argv, io.Discard)
			checkParse(t, got, err, &tt.want, "")
		})
	}

	rolloutTests := []struct {
		name string
		argv []string
		want rolloutArgs
	}{
		{name: "before the group", argv: []string{"--kubeconfig", "h.yaml", "--context", "h", "-n", "serve", "rollout", "status", "llm"},
			want: rolloutArgs{hub: hubH, name: "llm"}},
		{name: "between group and verb", argv: []string{"rollout", "--kubeconfig", "h.yaml", "status", "-w", "serve/llm", "--context", "h"},
			want: rolloutArgs{hub: hubH, namespace: "serve", name: "llm", watch: true}},
	}
	for _, tt := range rolloutTests {
		t.Run("rollout "+tt.name, func(t *testing.T) {
			got, err := parseRolloutLine("status", tt.argv, io.Discard)
			checkParse(t, got, err, &tt.want, "")
		})
	}

	// join's member stays selected by its own flags alone, wherever the hub's are.
	member := []string{"--member-kubeconfig", "m.yaml", "--member-context", "m", "--name", "m1"}
	joinDefaults := joinArgs{member: clusterFlags{kubeconfig: "m.yaml", context: "m"}, name: "m1", hubNamespace: "rayfleet-system",
		memberNamespace: "rayfleet-system", bootstrapTokenTTL: 365 * 24 * time.Hour, hubName: "rayfleet", guardTimeout: 30 * time.Second}
	joinWith := func(hub clusterFlags) *joinArgs {
		a := joinDefaults
		a.hub = hub
		return &a
	}
	joinTests := []struct {
		name    string
		argv    []string
		want    *joinArgs
		wantErr string
	}{
		{name: "hub before", argv: append([]string{"--kubeconfig", "h.yaml", "--context", "h", "join"}, member...), want: joinWith(hubH)},
		{name: "hub after", argv: append(append([]string{"join"}, member...), "--kubeconfig", "h.yaml", "--context", "h"), want: joinWith(hubH)},
		{name: "hub aliases", argv: append([]string{"join", "--hub-kubeconfig", "h.yaml", "--hub-context", "h"}, member...), want: joinWith(hubH)},
		{name: "the hub's kubeconfig twice", argv: append([]string{"--kubeconfig", "a.yaml", "join", "--hub-kubeconfig", "b.yaml"}, member...),
			wantErr: "--hub-kubeconfig and --kubeconfig name the same thing"},
		{name: "namespace before", argv: append([]string{"-n", "serve", "join"}, member...),
			wantErr: "-n/--namespace is not taken here: --hub-namespace and --member-namespace name the namespaces"},
		{name: "namespace after", argv: append(append([]string{"join"}, member...), "--namespace", "serve"),
			wantErr: "-n/--namespace is not taken here"},
	}
	for _, tt := range joinTests {
		t.Run("join "+tt.name, func(t *testing.T) {
			got, err := parseJoinLine(tt.argv, io.Discard)
			checkParse(t, got, err, tt.want, tt.wantErr)
		})
	}
}

// TestConnectionFlagsRun runs whole command lines: the connection flags reach the command
// wherever they are, and a command that reaches no hub refuses them.
func TestConnectionFlagsRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "kubeconfig before status", args: []string{"--kubeconfig", "/nonexistent/kubeconfig", "status"},
			wantCode: 1, wantStderr: "rayfleet status: loading the hub's kubeconfig: stat /nonexistent/kubeconfig"},
		{name: "boolean flag before status", args: []string{"--insecure-skip-tls-verify", "status", "--kubeconfig=/nonexistent/kubeconfig"},
			wantCode: 1, wantStderr: "rayfleet status: loading the hub's kubeconfig"},
		{name: "kubeconfig before rollout", args: []string{"--kubeconfig", "/nonexistent/kubeconfig", "-n", "serve", "rollout", "status", "llm"},
			wantCode: 1, wantStderr: "rayfleet rollout status: loading the hub's kubeconfig"},
		{name: "namespace of join", args: []string{"join", "-n", "serve", "--name", "m1", "--member-context", "m"},
			wantCode: 2, wantStderr: "rayfleet join: -n/--namespace is not taken here"},
		{name: "dev takes none", args: []string{"--context", "h", "dev", "status"},
			wantCode: 2, wantStderr: "rayfleet dev status: it reaches no hub, so it takes no connection flags: --context"},
		{name: "version takes none", args: []string{"version", "--server", "https://h:6443"},
			wantCode: 2, wantStderr: "takes no connection flags: --server"},
		{name: "help of a command", args: []string{"--kubeconfig", "h.yaml", "status", "--help"},
			wantStdout: "Connection flags (kubectl's; they select the hub, before or after the command):"},
		{name: "help command", args: []string{"--kubeconfig", "h.yaml", "help", "status"}, wantStdout: "Usage: rayfleet status [flags]"},
		{name: "root without a command", args: []string{"--kubeconfig", "h.yaml"}, wantCode: 2, wantStderr: "Usage: rayfleet <command>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
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

// TestConnectionFlagsUsage lists the connection flags where they are taken, and only there.
func TestConnectionFlagsUsage(t *testing.T) {
	tests := []struct {
		args              []string
		connection, hubNS bool
	}{
		{args: []string{"--help"}, connection: true, hubNS: true},
		{args: []string{"status", "--help"}, connection: true, hubNS: true},
		{args: []string{"rollout", "undo", "--help"}, connection: true, hubNS: true},
		{args: []string{"join", "--help"}, connection: true},
		{args: []string{"unjoin", "--help"}, connection: true},
		{args: []string{"dev", "up", "--help"}},
		{args: []string{"version", "--help"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout bytes.Buffer
			if code := run(t.Context(), tt.args, &stdout, io.Discard); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			out := stdout.String()
			if got := strings.Contains(out, "Connection flags") && strings.Contains(out, "--kubeconfig string"); got != tt.connection {
				t.Errorf("connection flags listed: %t, want %t:\n%s", got, tt.connection, out)
			}
			if got := strings.Contains(out, "-n, --namespace"); got != tt.hubNS {
				t.Errorf("-n listed: %t, want %t:\n%s", got, tt.hubNS, out)
			}
		})
	}
}

// TestNoKubeconfigSaysWhy covers a command run with nothing selecting the hub: the error says
// how to select it, and names the local dev fleet's hub kubeconfig when there is one, instead of
// client-go's "connection refused" from localhost:8080.
func TestNoKubeconfigSaysWhy(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	state := filepath.Join(home, "state")
	t.Setenv("XDG_STATE_HOME", state)

	_, err := newHubFlags().connect(clusterFlags{})
	if err == nil || err.Error() != "no kubeconfig selects the hub: give --kubeconfig FILE or set KUBECONFIG" {
		t.Fatalf("without a dev fleet: got %v", err)
	}
	_, err = connect(clusterFlags{}, "member")
	if err == nil || !strings.HasPrefix(err.Error(), "no kubeconfig selects the member:") {
		t.Fatalf("the member: got %v", err)
	}

	hubConfig := filepath.Join(state, "rayfleet", "dev", "kubeconfigs", "hub.kubeconfig")
	if err := os.MkdirAll(filepath.Dir(hubConfig), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hubConfig, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = newHubFlags().connect(clusterFlags{})
	if err == nil || !strings.HasSuffix(err.Error(), "; the local dev fleet's hub is --kubeconfig "+hubConfig) {
		t.Fatalf("with a dev fleet: got %v", err)
	}
	// A server given on the command line selects a cluster: no hint then.
	h := newHubFlags()
	server := "https://127.0.0.1:1"
	h.config.APIServer = &server
	if _, err := h.connect(clusterFlags{}); err != nil {
		t.Fatalf("with --server: %v", err)
	}
}
