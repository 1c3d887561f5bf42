package devfleet

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// waitTimeout bounds the waits for a child process to change state.
const waitTimeout = 10 * time.Second

// startCat starts cat with an open stdin: a process that runs until the test closes it (or
// kills it).
func startCat(t *testing.T) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := exec.Command("cat")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, stdin
}

// pollUntil waits until cond holds.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.pid")
	want := Record{PID: 4242, Bin: "/opt/bin/kube apiserver", StartTicks: 987654321}
	if err := WriteRecord(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("ReadRecord = %+v, want %+v", got, want)
	}
	bad := []string{"", "12\n", "x\n/bin/a\n1\n", "12\n/bin/a\nsoon\n", "12\n\n1\n", "-3\n/bin/a\n1\n"}
	for _, content := range bad {
		if _, err := ParseRecord(content); err == nil {
			t.Errorf("ParseRecord(%q) passed, want an error", content)
		}
	}
}

// TestRecordAlive checks that a record matches only the process it was taken of: a pid now
// running another program, or started at another time (a reused pid), does not match.
func TestRecordAlive(t *testing.T) {
	cat, _ := startCat(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	live := RecordOf(cat.Process.Pid, cat.Path)
	if live.StartTicks == 0 {
		t.Fatal("no start time read for a live process")
	}
	tests := []struct {
		name string
		rec  Record
		want bool
	}{
		{name: "the live process", rec: live, want: true},
		{name: "the live process, no start time recorded", rec: Record{PID: live.PID, Bin: live.Bin}, want: true},
		{name: "this test by its executable", rec: RecordOf(os.Getpid(), self), want: true},
		{name: "pid reused by another program", rec: Record{PID: live.PID, Bin: "/usr/local/bin/etcd", StartTicks: live.StartTicks}, want: false},
		{name: "pid reused, started at another time", rec: Record{PID: live.PID, Bin: live.Bin, StartTicks: live.StartTicks + 1}, want: false},
		{name: "no such pid", rec: Record{PID: 1 << 30, Bin: live.Bin}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rec.Alive(); got != tt.want {
				t.Errorf("Alive() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSignalSparesAReusedPid checks that a record whose pid now belongs to another process
// signals nothing, and that a zombie counts as gone.
func TestSignalSparesAReusedPid(t *testing.T) {
	cat, stdin := startCat(t)
	stale := Record{PID: cat.Process.Pid, Bin: cat.Path, StartTicks: RecordOf(cat.Process.Pid, cat.Path).StartTicks + 1}
	if err := stale.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// cat survived the stale record: closing its input ends it normally.
	_ = stdin.Close()
	pollUntil(t, "cat to exit", func() bool { st, err := readStat(cat.Process.Pid); return err == nil && st.state == 'Z' })
	if live := RecordOf(cat.Process.Pid, cat.Path); live.Alive() {
		t.Error("a zombie counts as alive")
	}
	if err := cat.Wait(); err != nil {
		t.Errorf("cat exited with %v, want a normal exit (not killed)", err)
	}
}
