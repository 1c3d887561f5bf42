package devfleet

import (
	"bytes"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
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

// TestRemoveNetNS checks that the network namespaces of a supervisor that no longer runs are
// removed, and those of one that runs are not.
func TestRemoveNetNS(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip (iproute2)")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := Record{PID: gone.Process.Pid, Bin: "/nonexistent/rayfleet"}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	alive := RecordOf(os.Getpid(), self)
	for _, sup := range []Record{dead, alive} {
		name := localfleet.NetNSPrefix(sup.PID) + "test"
		ns, err := localcluster.CreateNetNS(name, netip.MustParsePrefix("10.200.251.1/24"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ns.Delete() })
	}

	var out bytes.Buffer
	for _, sup := range []Record{dead, alive} {
		if err := removeNetNS(netnsDir, sup, &out); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(netnsDir, localfleet.NetNSPrefix(dead.PID)+"test")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead supervisor's namespace is still there (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(netnsDir, localfleet.NetNSPrefix(alive.PID)+"test")); err != nil {
		t.Errorf("the live supervisor's namespace is gone: %v", err)
	}
	if want := "Removed network namespace " + localfleet.NetNSPrefix(dead.PID) + "test"; !strings.Contains(out.String(), want) {
		t.Errorf("output %q lacks %q", out.String(), want)
	}
}
