//go:build e2e

package localcluster

import (
	"os"
	"strings"
	"testing"
)

func TestReadUsageOfALiveProcess(t *testing.T) {
	u, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// A running Go test binary has touched megabytes of memory.
	if u.PeakRSSBytes < 1<<20 {
		t.Errorf("PeakRSSBytes = %d, want at least 1 MiB", u.PeakRSSBytes)
	}
	if u.CPU < 0 {
		t.Errorf("CPU = %v, want >= 0", u.CPU)
	}
}

func TestProcessUsageAfterExit(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "clean exit", args: []string{"-c", "exit 0"}},
		{name: "failing exit", args: []string{"-c", "exit 3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := startProcess(t.TempDir(), "sh", "/bin/sh", tt.args, nil)
			if err != nil {
				t.Fatal(err)
			}
			<-p.Done()
			u, err := p.Usage()
			if err != nil {
				t.Fatal(err)
			}
			if u.PeakRSSBytes <= 0 {
				t.Errorf("PeakRSSBytes = %d after exit, want > 0 from rusage", u.PeakRSSBytes)
			}
			p.Stop() // must not block on an exited process
		})
	}
}

// Kill ends a process that ignores SIGTERM at once, and reports how it ended.
func TestProcessKill(t *testing.T) {
	p, err := startProcess(t.TempDir(), "sh", "/bin/sh", []string{"-c", `trap "" TERM; while :; do sleep 1; done`}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Kill()
	exited, err := p.Exited()
	if !exited {
		t.Fatal("the process is still running after Kill")
	}
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("exit error %v, want one saying the process was killed", err)
	}
	p.Kill() // must not block on an exited process
}
