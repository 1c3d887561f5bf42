// Command hub is RayFleet's control plane: a multicluster-runtime manager on the hub cluster whose
// kubeconfig provider engages member clusters from labelled Secrets in the hub namespace, running
// the MemberCluster, PlacementPolicy and hub RayService controllers and the orphan sweep. The
// wiring and the flags are hub/server's (importable, so that a benchmark can run the same hub
// with simulated members); this is its main.
package main

import (
	"context"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rayfleet/rayfleet/hub/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:]); err != nil {
		ctrl.Log.WithName("setup").Error(err, "hub failed")
		os.Exit(1)
	}
}

// run runs the hub with this build's version until ctx ends (SIGINT or SIGTERM).
func run(ctx context.Context, args []string) error {
	return server.Run(ctx, args, server.Options{Version: version})
}
