package benchutil

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Main runs a benchmark: run gets a context cancelled by SIGINT or SIGTERM, and an error
// ends the process with status 1. The informers the benchmarks use log through
// controller-runtime; their output is silenced, since the report is all that matters.
func Main(run func(context.Context) error) {
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
