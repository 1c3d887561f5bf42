package devfleet

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is `rayfleet dev status`: whether a dev fleet runs from stateDir, the state of every
// process it started, the fleet status tables (when the hub answers), the kubeconfigs (shown
// with the program kubectl) and the logs. It returns whether the fleet runs with every process
// alive; no fleet is a short note, not an error.
func Status(ctx context.Context, stateDir, kubectl string, out io.Writer) (bool, error) {
	l := Layout{Dir: stateDir}
	st, err := readStateIfAny(l.StateFile())
	if err != nil {
		return false, err
	}
	sup, supErr := ReadRecord(l.SupervisorPIDFile())
	if supErr != nil || !sup.Alive() {
		notRunning(out, l, st)
		return false, nil
	}
	phase, uptime := PhaseStarting, ""
	if st != nil {
		phase = st.Phase
		uptime = ", up " + time.Since(st.StartedAt).Round(time.Second).String()
	}
	fmt.Fprintf(out, "Dev fleet %s (supervisor pid %d%s; state in %s)\n\n", phase, sup.PID, uptime, stateDir)
	recs, err := readRecords(l)
	if err != nil {
		return false, err
	}
	healthy := true
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tSTATUS")
	for _, r := range recs {
		state := "running"
		if !r.Alive() {
			state, healthy = "exited", false
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", r.name, r.PID, state)
	}
	if err := tw.Flush(); err != nil {
		return false, fmt.Errorf("writing the component table: %w", err)
	}
	fmt.Fprintln(out)
	if st == nil {
		return healthy, nil
	}
	if _, err := os.Stat(l.Kubeconfig(HubName)); err != nil {
		fmt.Fprintln(out, "(no fleet status yet: the hub is still starting)")
		fmt.Fprintf(out, "Logs: %s\n", st.LogDir)
		return healthy, nil
	}
	PrintSummary(ctx, out, st, kubectl)
	return healthy, nil
}

// notRunning says that no dev fleet runs, and what the state directory still holds.
func notRunning(out io.Writer, l Layout, st *State) {
	switch {
	case !l.Exists():
		fmt.Fprintf(out, "No dev fleet is running (nothing in %s).\n", l.Dir)
	case st != nil && st.Phase == PhaseFailed:
		fmt.Fprintf(out, "No dev fleet is running. The last one failed: %s\n", firstLine(st.Error))
		fmt.Fprintf(out, "Its logs are in %s; `rayfleet dev down` removes them.\n", st.LogDir)
	default:
		fmt.Fprintf(out, "No dev fleet is running; an earlier one left state in %s (`rayfleet dev down` removes it).\n", l.Dir)
	}
}

// firstLine is s up to its first newline (errors carrying log tails are long).
func firstLine(s string) string {
	first, rest, _ := strings.Cut(s, "\n")
	if rest != "" {
		first += " …"
	}
	return first
}
