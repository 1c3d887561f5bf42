//go:build e2e

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment of `make chaos`: where the table goes (unset: no table, as in .ci/run's subset),
// and the command named in its header.
const (
	envTable   = "RAYFLEET_CHAOS_TABLE"
	envCommand = "RAYFLEET_CHAOS_COMMAND"
	// envFull runs every scenario at full length; without it (make e2e, .ci/run) every
	// scenario runs shortened: shorter outages and storms, fewer RayServices.
	envFull = "RAYFLEET_CHAOS_FULL"
	// envTestLog is the `go test -v` output of the tests of GatewayRows, which `make chaos`
	// runs first; unset, the table has no such rows.
	envTestLog = "RAYFLEET_CHAOS_TEST_LOG"
)

// full reports whether this is `make chaos`'s full run.
func full() bool { return os.Getenv(envFull) != "" }

// span is long in the full run and short otherwise (an outage of 2 minutes, or 30 s in CI).
func span(long, short time.Duration) time.Duration {
	if full() {
		return long
	}
	return short
}

// collected are the rows the scenarios filled, in the order they ended.
var collected struct {
	mu   sync.Mutex
	rows []*Result
}

func TestMain(m *testing.M) {
	code := m.Run()
	if path := os.Getenv(envTestLog); path != "" {
		if !collectTestLog(path) {
			code = 1
		}
	}
	if path := os.Getenv(envTable); path != "" {
		if err := writeTable(path); err != nil {
			fmt.Fprintln(os.Stderr, "e2e/chaos:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// scenario opens the test's row of the table. When the test ends the row records whether it
// passed and how long it took, and is printed to the test log as JSON.
func scenario(t *testing.T, order int, name, done, checked string) *Result {
	t.Helper()
	r := &Result{Order: order, Scenario: name, Done: done, Checked: checked}
	start := time.Now()
	t.Cleanup(func() {
		r.Duration = time.Since(start)
		r.Passed = !t.Failed() && r.Lost == 0
		if t.Failed() {
			r.Failure = "see " + t.Name() + "'s log"
		}
		if r.Lost > 0 && !t.Failed() {
			t.Errorf("%d member workloads lost", r.Lost)
		}
		if b, err := json.Marshal(r); err == nil {
			t.Logf("chaos result: %s", b)
		}
		collected.mu.Lock()
		collected.rows = append(collected.rows, r)
		collected.mu.Unlock()
	})
	return r
}

// collectTestLog adds the rows of GatewayRows made from the test log at path (a missing file
// is a log of tests that did not run) and reports whether all of them passed.
func collectTestLog(path string) bool {
	var log TestLog
	f, err := os.Open(path)
	switch {
	case err == nil:
		log, err = ParseTestLog(f)
		_ = f.Close()
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e/chaos: %s: %v\n", path, err)
			return false
		}
	case !os.IsNotExist(err):
		fmt.Fprintln(os.Stderr, "e2e/chaos:", err)
		return false
	}
	passed := true
	collected.mu.Lock()
	defer collected.mu.Unlock()
	for _, r := range FromTestLog(GatewayRows, log) {
		if !r.Passed {
			fmt.Fprintf(os.Stderr, "e2e/chaos: row %d (%s) failed: %s\n", r.Order, r.Scenario, r.Failure)
			passed = false
		}
		collected.rows = append(collected.rows, &r)
	}
	return passed
}

// writeTable renders the collected rows to path.
func writeTable(path string) error {
	collected.mu.Lock()
	rows := make([]Result, 0, len(collected.rows))
	for _, r := range collected.rows {
		rows = append(rows, *r)
	}
	collected.mu.Unlock()
	command := os.Getenv(envCommand)
	if command == "" {
		command = "go test -tags e2e ./e2e/chaos"
	}
	// Before the file is opened: truncating the committed table makes the tree dirty.
	h := Header{Commit: commit(), Date: time.Now(), CPUs: runtime.NumCPU(), Command: command}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	if err = Render(f, h, rows, Notes); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing the table to %s: %w", path, err)
	}
	return f.Close()
}

// commit is the checked-out commit, marked dirty when the tree has changes.
func commit() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
