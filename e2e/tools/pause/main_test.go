package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"
)

func TestWait(t *testing.T) {
	tests := []struct {
		name      string
		sigs      []os.Signal
		want      os.Signal
		wantReaps int
	}{
		{name: "SIGTERM ends it", sigs: []os.Signal{syscall.SIGTERM}, want: syscall.SIGTERM},
		{name: "SIGINT ends it", sigs: []os.Signal{syscall.SIGINT}, want: syscall.SIGINT},
		{name: "each SIGCHLD reaps, then SIGTERM ends it", sigs: []os.Signal{syscall.SIGCHLD, syscall.SIGCHLD, syscall.SIGTERM, syscall.SIGCHLD}, want: syscall.SIGTERM, wantReaps: 2},
		{name: "closed channel", sigs: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := make(chan os.Signal, len(tt.sigs))
			for _, s := range tt.sigs {
				ch <- s
			}
			close(ch)
			reaps := 0
			got := wait(ch, func() int { reaps++; return 0 })
			if got != tt.want || reaps != tt.wantReaps {
				t.Errorf("wait = %v after %d reaps, want %v after %d", got, reaps, tt.want, tt.wantReaps)
			}
		})
	}
}

// TestReap starts a child it never waits for (as an orphan re-parented to pause would be) and
// checks that reap collects it once SIGCHLD says it exited, and that nothing is left after.
func TestReap(t *testing.T) {
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)

	// The test binary with no test to run exits at once.
	pid, err := syscall.ForkExec(os.Args[0], []string{os.Args[0], "-test.run=^$"}, &syscall.ProcAttr{Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-chld:
	case <-time.After(30 * time.Second):
		t.Fatalf("no SIGCHLD for child %d", pid)
	}
	if n := reap(); n != 1 {
		t.Errorf("reap() = %d, want 1", n)
	}
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); !errors.Is(err, syscall.ECHILD) {
		t.Errorf("child %d is still there after reap (wait4: %v)", pid, err)
	}
	if n := reap(); n != 0 {
		t.Errorf("second reap() = %d, want 0", n)
	}
}
