package benchutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rayfleet/rayfleet/shared/localfleet/auditlog"
)

func TestAuditPolicyVerbs(t *testing.T) {
	got := AuditPolicyVerbs("hub", "Metadata", "get", "create")
	for _, want := range []string{`users: ["hub"]`, `verbs: ["get", "create"]`, "level: Metadata", "- level: None"} {
		if !strings.Contains(got, want) {
			t.Errorf("policy lacks %q:\n%s", want, got)
		}
	}
	if !IsWrite("patch") || IsWrite("get") || IsWrite("watch") {
		t.Error("IsWrite tells reads from writes wrongly")
	}
}

// TestCountWritesIn counts over windows and over the files the API server rotated the log into.
func TestCountWritesIn(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	write := func(name string, lines ...string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("audit-2026-01-02T03-04-06.000.log",
		auditLine("ResponseComplete", "hub", "create", "rayservicebindings", "", 201, at(1)),
		auditLine("ResponseComplete", "hub", "get", "clusterreports", "", 200, at(2)))
	write("audit.log",
		auditLine("ResponseComplete", "hub", "patch", "rayservices", "status", 200, at(3)),
		auditLine("ResponseComplete", "other", "patch", "rayservices", "status", 200, at(3)))
	write("audit-policy.yaml", "not a log")
	files, err := AuditLogFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "audit-2026-01-02T03-04-06.000.log"), path}, files); diff != "" {
		t.Errorf("AuditLogFiles (-want +got):\n%s", diff)
	}
	got, err := CountWritesIn(path, "hub", []Window{{To: at(2)}, {From: at(2)}, {}})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[WriteKey]int{
		{{"rayservicebindings", "create"}: 1, {"clusterreports", "get"}: 1},
		{{"rayservices/status", "patch"}: 1},
		{{"rayservicebindings", "create"}: 1, {"clusterreports", "get"}: 1, {"rayservices/status", "patch"}: 1},
	}
	for i := range want {
		if diff := cmp.Diff(want[i], got[i].ByKey); diff != "" {
			t.Errorf("window %d (-want +got):\n%s", i, diff)
		}
	}
}

// TestAuditTail follows a log through its rotation: the old file's last events, then the new
// file's from its start.
func TestAuditTail(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "audit.log")
	line := func(resource string) string {
		return auditLine("ResponseComplete", "hub", "patch", resource, "", 200, at) + "\n"
	}
	appendTo := func(p, s string) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(path, line("before"))
	tail, err := openTail(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tail.f.Close() }()
	var seen []string
	collect := func() {
		t.Helper()
		if err := tail.next(func(ev auditlog.Event) { seen = append(seen, ev.ObjectRef.Resource) }); err != nil {
			t.Fatal(err)
		}
	}
	collect()
	// Half a line is kept until its end arrives.
	half := line("split")
	appendTo(path, line("a")+half[:10])
	collect()
	appendTo(path, half[10:])
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(path, line("b"))
	collect()
	if diff := cmp.Diff([]string{"a", "split", "b"}, seen); diff != "" {
		t.Errorf("events seen (-want +got):\n%s", diff)
	}
}
