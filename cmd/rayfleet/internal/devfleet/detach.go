package devfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// detachTimeout bounds how long `dev up --detach` waits for its supervisor: the control planes'
// own start-up limits plus ReadyTimeout, with room to spare. The supervisor gives up earlier.
const detachTimeout = 15 * time.Minute

// detachPoll is how often `dev up --detach` looks at the supervisor's log and fleet.json.
const detachPoll = 250 * time.Millisecond

// Up is `rayfleet dev up`: the preflight, then the removal of what a dev fleet that no longer
// runs left in the state directory, then the fleet, in this process (Run) or, with detach, in
// a supervisor started as cli supervisorArgs... (Detach).
func Up(ctx context.Context, c Config, out io.Writer, detach bool, supervisorArgs []string) error {
	if err := Preflight(c); err != nil {
		return err
	}
	if err := clearStale(ctx, Layout{Dir: c.StateDir}, out); err != nil {
		return err
	}
	if detach {
		return Detach(ctx, c, out, supervisorArgs)
	}
	return Run(ctx, c, out, false)
}

// Detach runs `c.CLI supervisorArgs...` — which must call Run with detached true — in a
// session of its own with its output in supervisor.log, shows that log as progress until
// fleet.json says ready or failed, and prints the summary. On failure it shows the tails of the
// logs, stops the supervisor and everything it started, and keeps the logs; on ctx's end it
// stops them and removes the state.
func Detach(ctx context.Context, c Config, out io.Writer, supervisorArgs []string) error {
	l := Layout{Dir: c.StateDir}
	if err := os.MkdirAll(l.LogDir(), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", l.LogDir(), err)
	}
	logFile, err := os.OpenFile(l.SupervisorLog(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("creating the supervisor's log: %w", err)
	}
	cmd := exec.Command(c.CLI, supervisorArgs...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// A session of its own: no terminal to get SIGINT or SIGHUP from, and no parent to die
	// with; `dev down` stops it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	_ = logFile.Close()
	if err != nil {
		return fmt.Errorf("starting the supervisor %s: %w", c.CLI, err)
	}
	supervisor := RecordOf(cmd.Process.Pid, c.CLI)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fmt.Fprintf(out, "Started the dev fleet's supervisor (pid %d) in the background.\n", cmd.Process.Pid)

	st, err := await(ctx, l, exited, out)
	if err != nil {
		return errors.Join(err, abandon(ctx, l, supervisor, out))
	}
	fmt.Fprintln(out)
	PrintSummary(ctx, out, st, c.kubectl())
	fmt.Fprintf(out, "\nThe fleet runs in the background (supervisor pid %d): `rayfleet dev status` shows it, "+
		"`rayfleet dev down` stops it.\n", st.SupervisorPID)
	return nil
}

// await copies the supervisor's log to out as it grows and returns fleet.json once it says
// ready; it fails when it says failed, when the supervisor exits, when ctx ends or after
// detachTimeout.
func await(ctx context.Context, l Layout, exited <-chan error, out io.Writer) (*State, error) {
	log, err := os.Open(l.SupervisorLog())
	if err != nil {
		return nil, fmt.Errorf("reading the supervisor's log: %w", err)
	}
	defer func() { _ = log.Close() }()
	follow := func() { _, _ = io.Copy(out, log) } // from where the last copy stopped
	ctx, cancel := context.WithTimeout(ctx, detachTimeout)
	defer cancel()
	t := time.NewTicker(detachPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			follow()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, fmt.Errorf("the dev fleet was not ready within %s", detachTimeout)
			}
			return nil, fmt.Errorf("interrupted before the fleet was ready: %w", ctx.Err())
		case err := <-exited:
			follow()
			if st, _ := readStateIfAny(l.StateFile()); st != nil && st.Phase == PhaseFailed {
				return nil, errors.New("the dev fleet did not come up")
			}
			if !l.Exists() {
				return nil, errors.New("the dev fleet was stopped (`rayfleet dev down`) before it was ready")
			}
			return nil, fmt.Errorf("the supervisor exited before the fleet was ready (its log: %s): %w", l.SupervisorLog(), err)
		case <-t.C:
			follow()
			st, err := readStateIfAny(l.StateFile())
			if err != nil {
				return nil, err
			}
			if st != nil && st.Phase == PhaseReady {
				follow() // the supervisor logs before it writes fleet.json
				return st, nil
			}
			// On failure the supervisor stops the fleet and exits: the exit is awaited above,
			// so that its last words are shown.
		}
	}
}

// abandon cleans up after a detached start that did not end ready: it stops the supervisor and
// whatever it left running. After Ctrl-C the state goes too; otherwise the logs stay, and
// unless the supervisor has said what failed (phase failed, shown from its log), the tails of
// the agents' logs are shown.
func abandon(ctx context.Context, l Layout, supervisor Record, out io.Writer) error {
	interrupted := ctx.Err() != nil
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout+killWait)
	defer cancel()
	_, err := stopProcesses(stopCtx, l, supervisor, out)
	if interrupted {
		return errors.Join(err, l.Remove())
	}
	if st, _ := readStateIfAny(l.StateFile()); l.Exists() && (st == nil || st.Phase != PhaseFailed) {
		writeAgentLogTails(out, l.LogDir(), tailLines)
		fmt.Fprintf(out, "The logs stay in %s; `rayfleet dev down` removes them.\n", l.LogDir())
	}
	return err
}
