// Package spokebench is what the spoke's benchmarks (raycluster, rayservice) share: the flags
// they both take, the member control plane they start, the concurrent creates and the wait for
// every object to be ready, the informers that see readiness, and the report lines they print
// alike. Each benchmark keeps what it measures and how it words it.
package spokebench

import (
	"flag"
	"time"

	"github.com/rayfleet/rayfleet/e2e/bench/benchutil"
)

// Flags are the command-line flags both benchmarks take.
type Flags struct {
	// Count is how many objects are created at once (-clusters, -services).
	Count, Workers, Nodes, Parallel int
	SpokeBin, SpokeArgs             string
	Timeout, Settle                 time.Duration
	Keep                            bool
	AuditLevel                      string
}

// Usage is what the benchmarks word differently in the flags they share: the name and default
// of the count flag, the default of -workers, and the usage texts.
type Usage struct {
	CountName                    string
	CountDefault, WorkersDefault int
	Count, Workers, Parallel     string
	Timeout, Settle              string
}

// Register adds the shared flags to fs, worded by u.
func (f *Flags) Register(fs *flag.FlagSet, u Usage) {
	fs.IntVar(&f.Count, u.CountName, u.CountDefault, u.Count)
	fs.IntVar(&f.Workers, "workers", u.WorkersDefault, u.Workers)
	fs.IntVar(&f.Nodes, "nodes", 4, "fake kwok Nodes")
	fs.IntVar(&f.Parallel, "parallel", 0, u.Parallel)
	fs.StringVar(&f.SpokeBin, "spoke", benchutil.DefaultSpokeBinary(), "spoke binary")
	fs.StringVar(&f.SpokeArgs, "spoke-args", "", "extra spoke flags, space separated (e.g. --max-concurrent-reconciles=8)")
	fs.DurationVar(&f.Timeout, "timeout", 10*time.Minute, u.Timeout)
	fs.DurationVar(&f.Settle, "settle", 3*time.Second, u.Settle)
	fs.BoolVar(&f.Keep, "keep", false, "keep the control plane's state dir (logs, audit log)")
	fs.StringVar(&f.AuditLevel, "audit-level", "Metadata", "audit level of the spoke's writes: Metadata, or Request to keep their bodies")
}

// Complete fills in what defaults to other flags, once fs is parsed: -parallel 0 creates every
// object at once.
func (f *Flags) Complete() {
	if f.Parallel <= 0 {
		f.Parallel = f.Count
	}
}
