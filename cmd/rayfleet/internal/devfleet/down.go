package devfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// stopTimeout is how long the supervisor gets to stop the fleet after SIGTERM: it stops the
// agents, then each control plane, each process with up to 10 s of grace.
const stopTimeout = 60 * time.Second

// killWait is how long a SIGKILLed process may take to be gone.
const killWait = 10 * time.Second

// goneProbe is how often a stopping process is looked at.
const goneProbe = 100 * time.Millisecond

// supervisorName is the supervisor's pid file's name without .pid.
const supervisorName = "supervisor"

// Down is `rayfleet dev down`: it stops the fleet of stateDir (its supervisor with SIGTERM,
// which stops everything in order; then SIGKILL for any recorded process still running) and
// removes the state. Nothing running is no error.
func Down(ctx context.Context, stateDir string, out io.Writer) error {
	l := Layout{Dir: stateDir}
	if !l.Exists() {
		fmt.Fprintf(out, "No dev fleet is running (nothing in %s).\n", stateDir)
		return nil
	}
	sup, _ := ReadRecord(l.SupervisorPIDFile()) // none: only leftovers to kill
	n, err := stopProcesses(ctx, l, sup, out)
	if err != nil {
		return err
	}
	if err := removeNetNS(netnsDir, sup, out); err != nil {
		return err
	}
	if err := l.Remove(); err != nil {
		return err
	}
	if n == 0 {
		fmt.Fprintf(out, "No dev fleet was running; removed what one left in %s.\n", stateDir)
		return nil
	}
	fmt.Fprintf(out, "Stopped the dev fleet and removed %s.\n", stateDir)
	return nil
}

// clearStale removes what a dev fleet that no longer runs left in the state directory (its
// supervisor was killed, or it failed), so that a new one starts clean; Preflight has made sure
// that no supervisor runs.
func clearStale(ctx context.Context, l Layout, out io.Writer) error {
	if !l.Exists() {
		return nil
	}
	sup, _ := ReadRecord(l.SupervisorPIDFile())
	if _, err := stopProcesses(ctx, l, sup, out); err != nil {
		return err
	}
	if err := removeNetNS(netnsDir, sup, out); err != nil {
		return err
	}
	if err := l.Remove(); err != nil {
		return err
	}
	fmt.Fprintf(out, "Removed what an earlier dev fleet left in %s.\n", l.Dir)
	return nil
}

// stopProcesses stops the supervisor sup (a zero Record for none) with SIGTERM and waits up to
// stopTimeout for it (then SIGKILL), and then SIGKILLs every process of the pid files that is
// still running and still the recorded one. It returns how many processes were running.
func stopProcesses(ctx context.Context, l Layout, sup Record, out io.Writer) (int, error) {
	recs, err := readRecords(l)
	if err != nil {
		return 0, err
	}
	running := 0
	if sup.PID != 0 && sup.Alive() {
		running++
		fmt.Fprintf(out, "Stopping the dev fleet (supervisor pid %d)...\n", sup.PID)
		if err := sup.Signal(syscall.SIGTERM); err != nil {
			return running, err
		}
		if !waitGone(ctx, []Record{sup}, stopTimeout) {
			fmt.Fprintf(out, "The supervisor did not stop within %s; killing it.\n", stopTimeout)
			if err := sup.Signal(syscall.SIGKILL); err != nil {
				return running, err
			}
		}
	}
	left := []Record{sup}
	for _, r := range recs {
		if r.name == supervisorName || !r.Alive() {
			continue
		}
		running++
		left = append(left, r.Record)
		if err := r.Signal(syscall.SIGKILL); err != nil {
			return running, err
		}
		fmt.Fprintf(out, "Killed %s (pid %d), left behind by the supervisor.\n", r.name, r.PID)
	}
	if !waitGone(ctx, left, killWait) {
		var pids []string
		for _, r := range left {
			if r.PID != 0 && r.Alive() {
				pids = append(pids, strconv.Itoa(r.PID))
			}
		}
		return running, fmt.Errorf("processes %s still run after SIGKILL", strings.Join(pids, ", "))
	}
	return running, nil
}

// waitGone waits up to timeout until none of recs runs; zero Records are ignored.
func waitGone(ctx context.Context, recs []Record, timeout time.Duration) bool {
	err := wait.PollUntilContextTimeout(ctx, goneProbe, timeout, true, func(context.Context) (bool, error) {
		for _, r := range recs {
			if r.PID != 0 && r.Alive() {
				return false, nil
			}
		}
		return true, nil
	})
	return err == nil
}

// netnsDir is where named network namespaces live (ip netns).
const netnsDir = "/run/netns"

// removeNetNS deletes the network namespaces under dir that the fleet of supervisor sup made
// (localfleet.NetNSPrefix), once sup no longer runs: a supervisor that stops removes its own,
// one that was killed leaves them. Nothing without a recorded supervisor.
func removeNetNS(dir string, sup Record, out io.Writer) error {
	if sup.PID == 0 || sup.Alive() {
		return nil
	}
	left, err := filepath.Glob(filepath.Join(dir, localfleet.NetNSPrefix(sup.PID)+"*"))
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	var errs []error
	for _, path := range left {
		ns := localcluster.NetNS{Name: filepath.Base(path), Path: path}
		if err := ns.Delete(); err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(out, "Removed network namespace %s, left behind by the supervisor.\n", ns.Name)
	}
	return errors.Join(errs...)
}
