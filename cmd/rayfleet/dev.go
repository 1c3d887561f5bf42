package main

import (
	"context"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/devfleet"
)

const devLong = `Runs a local fleet to try RayFleet out: a hub and two members, us (region=us, CPU Nodes) and
eu (region=eu, GPU Nodes), each a real etcd and kube-apiserver on 127.0.0.1 with kwok playing
the Nodes; bin/hub, and per member bin/spoke and a Ray dashboard stand-in; the members joined
with 'rayfleet join'; and a sample RayService demo/fruit placed on both members by the
PlacementPolicy demo/two-regions (clusters: 2). It needs a clone of the repository after
'make tools' and 'make build'.`

const devUpLong = `Starts the dev fleet. The API servers listen on fixed ports (the hub on --base-port, us and eu
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

With --real-nodes (root; after 'make node-tools image') the hub and each member also get one
real Node: a kubelet, containerd and runc, a CNI bridge and kube-proxy in a network namespace
of its own (10.200.10.1 for the hub, then .11, .12), with <bin>/images imported, the API server
advertising that address, and the taint localfleet.rayfleet.io/real-node:NoSchedule so that the
Ray Pods stay on kwok's Nodes. bin/hub and bin/spoke still run on the host.

With --ray (root; after 'make node-tools image ray-image'; implies --traffic and --real-nodes)
the members run real Ray: each gets one real Node holding <bin>/images/ray.tar and no kwok
Nodes (the hub gets no Node), Traefik and the load balancer stand-ins run in a network namespace
of their own with the serve IPs on its loopback interface, the hub's API server forwarded in and
the gateway's port forwarded out to 127.0.0.1, and the only sample is demo/hello: Ray Serve
answering {"version": "v1"} on one member (PlacementPolicy demo/hello: BlueGreen, traffic
through gateway/fleet). 'curl http://127.0.0.1:<base-port+3>/' answers from Ray. A Ray head
takes a minute or more to serve on a busy machine, and about 1 GiB of memory.
`

const devDownLong = `Stops the dev fleet: its supervisor stops every process in order; any it left running is killed
by pid (only if that pid still runs the recorded program), and network namespaces a killed
supervisor left (real Nodes, --ray's traffic path) are deleted. Removes the state directory.
Nothing running is not an error.
`

const devStatusLong = `Shows whether the dev fleet runs, each process it started (running or exited), the fleet status
as 'rayfleet status -A' prints it, the kubeconfigs and the logs. Exit code 0 when the fleet runs
with every process alive, 1 otherwise.
`

// devArgs are the flags of the dev commands; each registers the ones it takes.
type devArgs struct {
	config devfleet.Config
	detach bool
}

// registerStateDir adds --state-dir.
func (a *devArgs) registerStateDir(fs *pflag.FlagSet) {
	fs.StringVar(&a.config.StateDir, "state-dir", "",
		"the fleet's state: logs, pid files, kubeconfigs (default ${XDG_STATE_HOME:-$HOME/.local/state}/rayfleet/dev)")
}

// registerUp adds the flags of `dev up` and of the hidden supervisor.
func (a *devArgs) registerUp(fs *pflag.FlagSet) {
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
	fs.BoolVar(&a.config.RealNodes, "real-nodes", false,
		"give the hub and each member one real Node (kubelet, containerd, runc) running <bin>/images; root, `make node-tools image`")
	fs.BoolVar(&a.config.Ray, "ray", false,
		"run real Ray on the members' real Nodes and serve the sample demo/hello through the gateway on 127.0.0.1 (implies --traffic --real-nodes); root, `make node-tools image ray-image`")
}

// devSupervise is the hidden command `dev up --detach` runs in the background.
const devSupervise = "supervise"

// newDevCommand builds `rayfleet dev` and its commands.
func newDevCommand(s streams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev <command>",
		Short: "Run a local fleet (a hub and two members) to try RayFleet out: up, down, status.",
		Long:  devLong,
		Args:  cobra.ArbitraryArgs,
		RunE:  groupRun,
	}
	cmd.AddCommand(newDevUpCommand(s), newDevDownCommand(s), newDevStatusCommand(s), newDevSuperviseCommand(s))
	return cmd
}

// devCommand is a dev command: no positional arguments, and run once the flags are parsed.
func devCommand(use, short, long string, run func(ctx context.Context) error) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := noArgs(cmd, args); err != nil {
				return err
			}
			return run(cmd.Context())
		},
	}
}

func newDevUpCommand(s streams) *cobra.Command {
	a := &devArgs{}
	cmd := devCommand("up", "Start the fleet and wait until its sample RayService is Ready; --detach runs it in the background.",
		devUpLong, func(ctx context.Context) error { return devUp(ctx, a, s) })
	a.registerUp(cmd.Flags())
	cmd.Flags().BoolVar(&a.detach, "detach", false, "run the fleet in the background and exit once the sample is Ready")
	return cmd
}

func devUp(ctx context.Context, a *devArgs, s streams) error {
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
	return devfleet.Up(ctx, c, s.Out, a.detach, supervisorArgs(c))
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
	if c.RealNodes {
		args = append(args, "--real-nodes")
	}
	if c.Ray {
		args = append(args, "--ray")
	}
	return args
}

func newDevSuperviseCommand(s streams) *cobra.Command {
	a := &devArgs{}
	cmd := devCommand(devSupervise, "Run the fleet in the background.", "Run by 'rayfleet dev up --detach'.",
		func(ctx context.Context) error {
			c, err := devfleet.Resolve(a.config)
			if err != nil {
				return err
			}
			return devfleet.Run(ctx, c, s.Out, true)
		})
	cmd.Hidden = true
	a.registerUp(cmd.Flags())
	cmd.Flags().StringVar(&a.config.Root, "root", "", "the repository clone the CRDs are read from")
	return cmd
}

func newDevDownCommand(s streams) *cobra.Command {
	a := &devArgs{}
	cmd := devCommand("down", "Stop the fleet (every process it started, by pid) and remove its state.", devDownLong,
		func(ctx context.Context) error {
			c, err := devfleet.Resolve(a.config)
			if err != nil {
				return err
			}
			return devfleet.Down(ctx, c.StateDir, s.Out)
		})
	a.registerStateDir(cmd.Flags())
	return cmd
}

// newDevStatusCommand maps a fleet that does not run (or runs with a process gone) to exit
// code 1 without an error message: see devStatusLong.
func newDevStatusCommand(s streams) *cobra.Command {
	a := &devArgs{}
	cmd := devCommand("status", "Show the fleet's processes, status and kubeconfigs; exit code 1 unless it runs whole.", devStatusLong,
		func(ctx context.Context) error {
			c, err := devfleet.Resolve(a.config)
			if err != nil {
				return err
			}
			healthy, err := devfleet.Status(ctx, c.StateDir, devfleet.Kubectl(c.K8sBin), s.Out)
			if err == nil && !healthy {
				return exitCode(1)
			}
			return err
		})
	a.registerStateDir(cmd.Flags())
	cmd.Flags().StringVar(&a.config.K8sBin, "k8s-bin", "", "directory of the kubectl to show in hints (default as for 'dev up')")
	return cmd
}
