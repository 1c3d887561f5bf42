// Command rayfleet is RayFleet's command line: `join` and `unjoin` members, the fleet's
// `status`, a RayService's `rollout` across its members, `dev` (a local fleet to try RayFleet
// out) and `version`.
// It reaches clusters through their APIs only: it imports its internal packages, shared/ (the
// local fleet included) and hub/revision (to read a RayService's revisions as the hub writes
// them), no hub controller and nothing of spoke/.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/utils/clock"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `rayfleet manages a fleet of Kubernetes clusters running Ray Serve.

Usage:
  rayfleet <command>

Commands:
  join      Join a member cluster to the hub.
  unjoin    Remove a member cluster from the hub.
  status    Show the fleet's status.
  rollout   Show and steer a RayService's rollout: status, history, pause, resume, approve, undo.
  dev       Run a local fleet (a hub and two members) to try RayFleet out: up, down, status.
  version   Print the version.

Run 'rayfleet <command> -h' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command and returns the process exit code: 0 on success, 1 when the
// command failed, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, streams{stdout: stdout, stderr: stderr, clock: clock.RealClock{}})
}

// runWith is run with the clock injected.
func runWith(ctx context.Context, args []string, s streams) int {
	stdout, stderr := s.stdout, s.stderr
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version", "--version":
		fmt.Fprintln(stdout, version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "join":
		return runCommand(ctx, args[0], join, args[1:], s)
	case "unjoin":
		return runCommand(ctx, args[0], unjoin, args[1:], s)
	case "status":
		return runCommand(ctx, args[0], status, args[1:], s)
	case "rollout":
		return runRollout(ctx, args[1:], s)
	case "dev":
		return runDev(ctx, args[1:], s)
	default:
		fmt.Fprintf(stderr, "rayfleet: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
