package main

import (
	"context"
	"flag"
	"fmt"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/devfleet"
)

const devUsage = `Usage: rayfleet dev <command> [flags]

Runs a local fleet to try RayFleet out: a hub and two members, us (region=us, CPU Nodes) and
eu (region=eu, GPU Nodes), each a real etcd and kube-apiserver on 127.0.0.1 with kwok playing
the Nodes; bin/hub, and per member bin/spoke and a Ray dashboard stand-in; the members joined
with 'rayfleet join'; and a sample RayService demo/fruit placed on both members by the
PlacementPolicy demo/two-regions (clusters: 2). It needs a clone of the repository after
'make tools' and 'make build'.

Commands:
  up       Start the fleet, wait until the hub reports demo/fruit Ready, print the fleet status
           and the kubeconfigs; run until Ctrl-C, or in the background with --detach. With
           --traffic, also a Gateway on the hub (Traefik) and demo/berry, a RayService with a
           BlueGreen rollout whose traffic goes through it.
  down     Stop the fleet (every process it started, by pid) and remove its state.
  status   Show the fleet's processes, its status and its kubeconfigs. Exit code 0 when it runs
           with every process alive, 1 otherwise (no fleet is a one-line note, not an error).

Run 'rayfleet dev <command> -h' for a command's flags.
`

const devUpUsage = `Usage: rayfleet dev up [flags]

Starts the dev fleet. The API servers listen on fixed ports (the hub on --base-port, us and eu
on the next two), so the kubeconfigs in <state-dir>/kubeconfigs stay valid from one run to the
next; logs go to <state-dir>/logs/<cluster>-<component>.log. In the foreground, Ctrl-C stops
the fleet and removes the state directory (--keep keeps it). With --detach a supervisor runs
the fleet in the background and 'rayfleet dev up' exits once the sample is Ready.

With --traffic the hub also gets Gateway API's CRDs and the Gateway gateway/fleet, which Traefik
(bin/k8s/traefik) serves on 127.0.0.1 at the port after the members' API servers; each member
gets a load balancer stand-in giving LoadBalancer Services the address 10.99.0.<n> (us .1, eu
.2) and answering there for Ray Serve; and the sample demo/berry (PlacementPolicy
demo/blue-green: one cluster, BlueGreen rollout, traffic through gateway/fleet) is applied too.
The stand-ins can only listen where 10.99.0.1 and 10.99.0.2 are assigned (a network namespace
with them on its loopback interface); elsewhere requests routed to them fail, and the rest of
the fleet works the same.

Flags:
`

const devDownUsage = `Usage: rayfleet dev down [flags]

Stops the dev fleet: its supervisor stops every process in order; any it left running is killed
by pid (only if that pid still runs the recorded program). Removes the state directory. Nothing
running is not an error.

Flags:
`

const devStatusUsage = `Usage: rayfleet dev status [flags]

Shows whether the dev fleet runs, each process it started (running or exited), the fleet status
as 'rayfleet status -A' prints it, the kubeconfigs and the logs. Exit code 0 when the fleet runs
with every process alive, 1 otherwise.

Flags:
`

// devArgs are the flags of the dev commands; each registers the ones it takes.
type devArgs struct {
	config devfleet.Config
	detach bool
}

// registerStateDir adds --state-dir.
func (a *devArgs) registerStateDir(fs *flag.FlagSet) {
	fs.StringVar(&a.config.StateDir, "state-dir", "",
		"the fleet's state: logs, pid files, kubeconfigs (default ${XDG_STATE_HOME:-$HOME/.local/state}/rayfleet/dev)")
}

// registerUp adds the flags of `dev up` and of the hidden supervisor.
func (a *devArgs) registerUp(fs *flag.FlagSet) {
	a.registerStateDir(fs)
	fs.IntVar(&a.config.BasePort, "base-port", devfleet.DefaultBasePort,
		"the hub's API server port on 127.0.0.1; the members us and eu get the next two")
	fs.StringVar(&a.config.K8sBin, "k8s-bin", "",
		"directory of etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (default $RAYFLEET_K8S_BIN or <clone>/bin/k8s)")
	fs.StringVar(&a.config.Bin, "bin", "",
		"directory of bin/hub and bin/spoke (default this binary's directory when they are there, else $RAYFLEET_BIN)")
	fs.BoolVar(&a.config.Keep, "keep", false, "keep the state directory when the foreground fleet stops")
	fs.BoolVar(&a.config.Traffic, "traffic", false,
		"add a traffic path: Traefik serving a Gateway on the hub, a load balancer per member, and the sample demo/berry (BlueGreen)")
}

// devSupervise is the hidden command `dev up --detach` runs in the background.
const devSupervise = "supervise"

// runDev runs `rayfleet dev <command>`.
func runDev(ctx context.Context, args []string, s streams) int {
	if len(args) == 0 {
		fmt.Fprint(s.stderr, devUsage)
		return 2
	}
	switch args[0] {
	case "help", "-h", "--help":
		fmt.Fprint(s.stdout, devUsage)
		return 0
	case "up":
		return runCommand(ctx, "dev up", devUp, args[1:], s)
	case "down":
		return runCommand(ctx, "dev down", devDown, args[1:], s)
	case "status":
		return devStatus(ctx, args[1:], s)
	case devSupervise:
		return runCommand(ctx, "dev "+devSupervise, devRunSupervisor, args[1:], s)
	default:
		fmt.Fprintf(s.stderr, "rayfleet dev: unknown command %q\n\n%s", args[0], devUsage)
		return 2
	}
}

func devUp(ctx context.Context, args []string, s streams) error {
	a := &devArgs{}
	fs := newFlagSet("dev up", devUpUsage, s.stderr)
	a.registerUp(fs)
	fs.BoolVar(&a.detach, "detach", false, "run the fleet in the background and exit once the sample is Ready")
	if err := parse(fs, args); err != nil {
		return usageErr{err}
	}
	c, err := devfleet.Resolve(a.config)
	if err != nil {
		return err
	}
	if !a.detach {
		// Closing the terminal should stop the fleet as Ctrl-C does, not leave its state.
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGHUP)
		defer stop()
	}
	return devfleet.Up(ctx, c, s.stdout, a.detach, supervisorArgs(c))
}

// supervisorArgs is the command line of the detached supervisor: every path resolved already,
// so that it does not depend on the working directory or the environment.
func supervisorArgs(c devfleet.Config) []string {
	args := []string{"dev", devSupervise,
		"--state-dir", c.StateDir, "--base-port", strconv.Itoa(c.BasePort),
		"--k8s-bin", c.K8sBin, "--bin", c.Bin, "--root", c.Root}
	if c.Traffic {
		args = append(args, "--traffic")
	}
	return args
}

func devRunSupervisor(ctx context.Context, args []string, s streams) error {
	a := &devArgs{}
	fs := newFlagSet("dev "+devSupervise, "Usage: rayfleet dev "+devSupervise+" [flags] (run by 'rayfleet dev up --detach')\n", s.stderr)
	a.registerUp(fs)
	fs.StringVar(&a.config.Root, "root", "", "the repository clone the CRDs are read from")
	if err := parse(fs, args); err != nil {
		return usageErr{err}
	}
	c, err := devfleet.Resolve(a.config)
	if err != nil {
		return err
	}
	return devfleet.Run(ctx, c, s.stdout, true)
}

func devDown(ctx context.Context, args []string, s streams) error {
	a := &devArgs{}
	fs := newFlagSet("dev down", devDownUsage, s.stderr)
	a.registerStateDir(fs)
	if err := parse(fs, args); err != nil {
		return usageErr{err}
	}
	c, err := devfleet.Resolve(a.config)
	if err != nil {
		return err
	}
	return devfleet.Down(ctx, c.StateDir, s.stdout)
}

// devStatus maps a fleet that does not run (or runs with a process gone) to exit code 1
// without an error message: see devStatusUsage.
func devStatus(ctx context.Context, args []string, s streams) int {
	healthy := true // stays so for -h and usage errors, which have their own exit codes
	code := runCommand(ctx, "dev status", func(ctx context.Context, args []string, s streams) error {
		a := &devArgs{}
		fs := newFlagSet("dev status", devStatusUsage, s.stderr)
		a.registerStateDir(fs)
		fs.StringVar(&a.config.K8sBin, "k8s-bin", "", "directory of the kubectl to show in hints (default as for 'dev up')")
		if err := parse(fs, args); err != nil {
			return usageErr{err}
		}
		c, err := devfleet.Resolve(a.config)
		if err != nil {
			return err
		}
		healthy, err = devfleet.Status(ctx, c.StateDir, devfleet.Kubectl(c.K8sBin), s.stdout)
		return err
	}, args, s)
	if code == 0 && !healthy {
		return 1
	}
	return code
}
