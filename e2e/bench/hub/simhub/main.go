// Command simhub is the hub benchmark's hub: bin/hub's wiring and flags (hub/server) with
// simulated members (e2e/bench/hub/simmembers) in place of the kubeconfig provider, so that a
// hub can be measured against 100 members on one machine. Every member is backed by the one
// member API server of --sim-member-kubeconfig; the harness runs this binary as a process, as
// it runs bin/hub, and measures its memory, CPU, metrics and API calls the same way.
//
//	simhub --kubeconfig=hub.kubeconfig --sim-member-kubeconfig=member.kubeconfig \
//	  --sim-members=100 --sim-namespaces=bench
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/rayfleet/rayfleet/e2e/bench/hub/simmembers"
	"github.com/rayfleet/rayfleet/hub/server"
)

// simFlags are simhub's own flags, next to bin/hub's.
type simFlags struct {
	members    int
	kubeconfig string
	namespaces string
}

func (s *simFlags) bind(fs *flag.FlagSet) {
	fs.IntVar(&s.members, "sim-members", 100, "Simulated members, named sim-000 onwards.")
	fs.StringVar(&s.kubeconfig, "sim-member-kubeconfig", "",
		"Kubeconfig of the member API server backing every simulated member, as the hub's identity there.")
	fs.StringVar(&s.namespaces, "sim-namespaces", "bench",
		"Comma-separated member namespaces the hub may use (its RayServices' namespaces); each member's cache watches these.")
}

// provider makes the simulated members from the flags and the hub's member settings.
func (s *simFlags) provider(set server.ProviderSettings) (multicluster.Provider, error) {
	if s.kubeconfig == "" {
		return nil, errors.New("--sim-member-kubeconfig is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading --sim-member-kubeconfig: %w", err)
	}
	var namespaces []string
	for ns := range strings.SplitSeq(s.namespaces, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	return simmembers.New(simmembers.Options{
		Members:        simmembers.Names(s.members),
		Namespaces:     namespaces,
		Config:         cfg,
		ClusterOptions: set.ClusterOptions,
		RESTOptions:    set.RESTOptions,
	})
}

func main() {
	var s simFlags
	err := server.Run(ctrl.SetupSignalHandler(), os.Args[1:], server.Options{
		Version:     "simhub",
		BindFlags:   s.bind,
		NewProvider: s.provider,
	})
	if err != nil {
		ctrl.Log.WithName("setup").Error(err, "simhub failed")
		os.Exit(1)
	}
}
