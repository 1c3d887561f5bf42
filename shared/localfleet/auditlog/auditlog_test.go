package auditlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	lines := []string{
		`{"stage":"ResponseComplete","verb":"patch","user":{"username":"hub"},` +
			`"objectRef":{"resource":"rayservices","namespace":"serve","name":"llm","subresource":"status"},` +
			`"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-01-02T03:04:05.000001Z","stageTimestamp":"2026-01-02T03:04:05.500000Z"}`,
		`{"stage":"ResponseComplete","verb":"get","user":{"username":"hub"}}`,
		`{"stage":"ResponseCompl`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var got []Event
	if err := Read(path, true, func(ev Event) { got = append(got, ev) }); err != nil {
		t.Fatalf("Read skipping torn lines: %v", err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d events, want 2", len(got))
	}
	first := got[0]
	want := ObjectRef{Resource: "rayservices", Namespace: "serve", Name: "llm", Subresource: "status"}
	if !first.Completed() || first.Code() != 409 || first.Verb != "patch" || first.User.Username != "hub" || *first.ObjectRef != want ||
		!first.RequestReceivedTimestamp.Equal(time.Date(2026, 1, 2, 3, 4, 5, 1000, time.UTC)) ||
		!first.StageTimestamp.Equal(time.Date(2026, 1, 2, 3, 4, 5, 500000000, time.UTC)) {
		t.Errorf("first event %+v", first)
	}
	if got[1].Completed() || got[1].Code() != 0 {
		t.Errorf("an event without an objectRef or a status: Completed %t, Code %d", got[1].Completed(), got[1].Code())
	}
	if err := Read(path, false, func(Event) {}); err == nil || !strings.Contains(err.Error(), "parsing audit event in "+path) {
		t.Errorf("Read of a torn line = %v, want a parse error naming the file", err)
	}
	if err := Read(filepath.Join(t.TempDir(), "none.log"), true, func(Event) {}); err == nil {
		t.Error("Read of a missing log succeeded")
	}
}
