// Command pause is the process a Pod sandbox holds: it keeps the Pod's namespaces alive, exits
// on SIGINT or SIGTERM, and, as PID 1 of a Pod that shares its process namespace, reaps the
// orphans re-parented to it. It does what Kubernetes' pause does, so the local fleet's Nodes run
// a sandbox image the project builds (`make image` writes it to bin/images/pause.tar).
package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is the pause image's, set by `make image`.
var version = "dev"

func main() {
	if len(os.Args) == 2 && (os.Args[1] == "-v" || os.Args[1] == "--version") {
		fmt.Println("pause", version)
		return
	}
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: pause [-v]")
		os.Exit(2)
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	sig := wait(sigs, reap)
	fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
}

// wait reaps children on every SIGCHLD and returns the first SIGINT or SIGTERM.
func wait(sigs <-chan os.Signal, reap func() int) os.Signal {
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		return sig
	}
	return nil
}

// reap collects every child that has exited, without blocking, and returns how many. One SIGCHLD
// may stand for several children, so it loops until none is left.
func reap() int {
	n := 0
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return n
		}
		n++
	}
}
