package devfleet

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStatusAndDown plays a dev fleet with cat processes: a supervisor, a component that runs
// and one whose pid now belongs to another program (this test). Status shows which run; Down
// stops the supervisor with SIGTERM, kills the component it left behind, spares the reused
// pid and removes the state.
func TestStatusAndDown(t *testing.T) {
	l := Layout{Dir: t.TempDir() + "/state"}
	for _, d := range []string{l.PIDDir(), l.LogDir(), l.KubeconfigDir()} {
		mkdir(t, d)
	}
	supervisor, _ := startCat(t)
	etcd, _ := startCat(t)
	records := map[string]Record{
		l.SupervisorPIDFile():    RecordOf(supervisor.Process.Pid, supervisor.Path),
		l.PIDFile("hub", "etcd"): RecordOf(etcd.Process.Pid, etcd.Path),
		l.PIDFile("us", "spoke"): {PID: os.Getpid(), Bin: "/nonexistent/bin/spoke"},
	}
	for path, r := range records {
		if err := WriteRecord(path, r); err != nil {
			t.Fatal(err)
		}
	}
	st := &State{Phase: PhaseReady, SupervisorPID: supervisor.Process.Pid, LogDir: l.LogDir(), StartedAt: time.Now()}
	if err := WriteState(l.StateFile(), st); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	healthy, err := Status(t.Context(), l.Dir, "kubectl", &out)
	if err != nil {
		t.Fatal(err)
	}
	if healthy {
		t.Error("Status healthy with a component gone")
	}
	for _, want := range []string{"Dev fleet ready (supervisor pid", "hub-etcd", "running", "us-spoke", "exited", "no fleet status yet"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, out.String())
		}
	}

	out.Reset()
	if err = Down(t.Context(), l.Dir, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Stopped the dev fleet") || !strings.Contains(out.String(), "Killed hub-etcd") {
		t.Errorf("down output:\n%s", out.String())
	}
	for name, cmd := range map[string]*exec.Cmd{"supervisor": supervisor, "etcd": etcd} {
		waitErr := cmd.Wait()
		var exit *exec.ExitError
		if !errors.As(waitErr, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() {
			t.Errorf("%s: Wait = %v, want killed by a signal", name, waitErr)
		}
	}
	if _, statErr := os.Stat(l.Dir); !errors.Is(statErr, fs.ErrNotExist) {
		t.Errorf("state dir still there: %v", statErr)
	}

	out.Reset()
	healthy, err = Status(t.Context(), l.Dir, "kubectl", &out)
	if err != nil || healthy || !strings.Contains(out.String(), "No dev fleet is running") {
		t.Errorf("Status after Down = %v, %v, output %q; want not running", healthy, err, out.String())
	}
	out.Reset()
	if err := Down(t.Context(), l.Dir, &out); err != nil || !strings.Contains(out.String(), "No dev fleet is running") {
		t.Errorf("second Down = %v, output %q", err, out.String())
	}
}

// TestStatusOfAFailedFleet checks that a failed fleet's status is a short note with the first
// line of the error, not a dump.
func TestStatusOfAFailedFleet(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	mkdir(t, l.LogDir())
	st := &State{Phase: PhaseFailed, Error: "kube-apiserver exited\n===== tails =====", LogDir: l.LogDir()}
	if err := WriteState(l.StateFile(), st); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	healthy, err := Status(t.Context(), l.Dir, "kubectl", &out)
	if err != nil || healthy {
		t.Fatalf("Status = %v, %v", healthy, err)
	}
	want := "No dev fleet is running. The last one failed: kube-apiserver exited …\nIts logs are in " + l.LogDir()
	if !strings.Contains(out.String(), want) || strings.Contains(out.String(), "tails") {
		t.Errorf("output %q, want it to contain %q and no log tails", out.String(), want)
	}
}
