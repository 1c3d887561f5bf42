// Command rayfleet is RayFleet's command line: `join` and `unjoin` members, the fleet's
// `status`, a RayService's `rollout` across its members, `dev` (a local fleet to try RayFleet
// out), `version` and `completion`. It follows kubectl's conventions (cobra, and
// k8s.io/cli-runtime's connection and -o flags), and installed as kubectl-rayfleet it runs as
// the kubectl plugin `kubectl rayfleet`.
// It reaches clusters through their APIs only: it imports its internal packages, shared/ (the
// local fleet included) and hub/revision (to read a RayService's revisions as the hub writes
// them), no hub controller and nothing of spoke/.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/clock"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	s := streams{IOStreams: genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, clock: clock.RealClock{}}
	code := runAs(ctx, displayName(os.Args[0]), os.Args[1:], s)
	stop()
	os.Exit(code)
}

// run executes one command and returns the process exit code: 0 on success, 1 when the
// command failed, 2 on a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runWith(ctx, args, streams{IOStreams: genericiooptions.IOStreams{Out: stdout, ErrOut: stderr}, clock: clock.RealClock{}})
}

// runWith is run with the streams and the clock injected.
func runWith(ctx context.Context, args []string, s streams) int {
	return runAs(ctx, "rayfleet", args, s)
}

// runAs is runWith under the name the user typed ("rayfleet" or "kubectl rayfleet").
func runAs(ctx context.Context, name string, args []string, s streams) int {
	root := newRootCommand(name, s)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return codeOf(cmd, err, s.ErrOut)
}
