package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseRollout(t *testing.T) {
	tests := []struct {
		name    string
		verb    string
		args    []string
		want    *rolloutArgs
		wantErr string
	}{
		{name: "status", verb: "status", args: []string{"serve/llm"}, want: &rolloutArgs{namespace: "serve", name: "llm"}},
		{name: "flags after the target", verb: "status", args: []string{"serve/llm", "--watch", "--hub-context", "h"},
			want: &rolloutArgs{hub: clusterFlags{context: "h"}, namespace: "serve", name: "llm", watch: true}},
		{name: "flags around the target", verb: "status", args: []string{"-w", "llm", "--hub-kubeconfig", "h.yaml"},
			want: &rolloutArgs{hub: clusterFlags{kubeconfig: "h.yaml"}, name: "llm", watch: true}},
		{name: "history revision", verb: "history", args: []string{"--revision", "3", "serve/llm"},
			want: &rolloutArgs{namespace: "serve", name: "llm", revision: 3}},
		{name: "approve stage", verb: "approve", args: []string{"serve/llm", "--stage", "canary"},
			want: &rolloutArgs{namespace: "serve", name: "llm", stage: "canary"}},
		{name: "undo to revision", verb: "undo", args: []string{"serve/llm", "--to-revision", "2"},
			want: &rolloutArgs{namespace: "serve", name: "llm", toRevision: 2}},
		{name: "pause", verb: "pause", args: []string{"serve/llm"}, want: &rolloutArgs{namespace: "serve", name: "llm"}},
		{name: "no target", verb: "resume", wantErr: "the RayService is required: <namespace>/<name>"},
		{name: "two targets", verb: "pause", args: []string{"serve/llm", "serve/asr"}, wantErr: "unexpected arguments: serve/asr"},
		{name: "bad namespace", verb: "status", args: []string{"Serve/llm"}, wantErr: `namespace "Serve"`},
		{name: "bad name", verb: "status", args: []string{"serve/"}, wantErr: `RayService name ""`},
		{name: "a flag of another verb", verb: "pause", args: []string{"serve/llm", "--watch"}, wantErr: "flag provided but not defined: -watch"},
		{name: "negative revision", verb: "undo", args: []string{"serve/llm", "--to-revision", "-1"}, wantErr: "revision numbers start at 1"},
		{name: "bad stage", verb: "approve", args: []string{"serve/llm", "--stage", "Canary"}, wantErr: `--stage "Canary"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRollout(tt.verb, tt.args, io.Discard)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(rolloutArgs{}, clusterFlags{})); diff != "" {
				t.Errorf("parsed (-want +got):\n%s", diff)
			}
		})
	}
	a := &rolloutArgs{name: "llm"}
	if got := a.key("team"); got != (types.NamespacedName{Namespace: "team", Name: "llm"}) {
		t.Errorf("a bare name's key = %v, want it in the hub context's namespace", got)
	}
}

// TestRolloutUsage covers the command line of `rayfleet rollout` that reaches no cluster.
func TestRolloutUsage(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "listed in help", args: []string{"help"}, wantStdout: "\n  rollout   Show and steer a RayService's rollout"},
		{name: "no verb", args: []string{"rollout"}, wantCode: 2, wantStderr: "Usage: rayfleet rollout <command>"},
		{name: "help", args: []string{"rollout", "--help"}, wantStdout: "  approve   Approve the stage the rollout waits for"},
		{name: "unknown verb", args: []string{"rollout", "restart", "serve/llm"}, wantCode: 2, wantStderr: `rayfleet rollout: unknown command "restart"`},
		{name: "status help", args: []string{"rollout", "status", "-h"}, wantStdout: "exits 0 once the\nrollout of the RayService's current spec is Complete"},
		{name: "history help", args: []string{"rollout", "history", "-h"}, wantStdout: "labelled fleet.rayfleet.io/origin-name=<name>"},
		{name: "pause help", args: []string{"rollout", "pause", "-h"}, wantStdout: "fleet.rayfleet.io/paused=true"},
		{name: "resume help", args: []string{"rollout", "resume", "-h"}, wantStdout: "a paused rollout continues"},
		{name: "approve help", args: []string{"rollout", "approve", "-h"}, wantStdout: "fleet.rayfleet.io/approved-stage=<target revision>/<stage>"},
		{name: "undo help", args: []string{"rollout", "undo", "-h"}, wantStdout: "commit the same spec to its source"},
		{name: "usage error", args: []string{"rollout", "undo"}, wantCode: 2, wantStderr: "rayfleet rollout undo: the RayService is required"},
		{name: "unreachable hub", args: []string{"rollout", "status", "serve/llm", "--hub-kubeconfig", "/nonexistent/kubeconfig"},
			wantCode: 1, wantStderr: "rayfleet rollout status: loading the hub's kubeconfig"},
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
