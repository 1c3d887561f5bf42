// Command rayfleet is RayFleet's command line. Only `version` works today; `join`, `unjoin`,
// `status` and `dev` land with later issues.
package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `rayfleet manages a fleet of Kubernetes clusters running Ray Serve.

Usage:
  rayfleet <command>

Commands:
  version   Print the version.

Coming with later issues:
  join      Join a member cluster to the hub.
  unjoin    Remove a member cluster from the hub.
  status    Show the fleet's status.
  dev       Run a local fleet (hub and two members) to try RayFleet out.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command and returns the process exit code: 0 on success, 2 on a usage error.
func run(args []string, stdout, stderr io.Writer) int {
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
	case "join", "unjoin", "status", "dev":
		fmt.Fprintf(stderr, "rayfleet %s is not yet available: it lands with a later issue\n", args[0])
		return 2
	default:
		fmt.Fprintf(stderr, "rayfleet: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
