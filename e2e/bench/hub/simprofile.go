package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Profile lengths of the scale benchmark's phases (-profile): the start of placement and of
// the status stream, where the hub is busiest, and a stretch of the steady state.
const (
	profilePlace  = 30 * time.Second
	profileStatus = 20 * time.Second
	profileSteady = 30 * time.Second
)

// profiler fetches simhub's CPU and heap profiles into dir; a nil profiler fetches nothing.
type profiler struct {
	dir, base string
	run       int
	wg        sync.WaitGroup
	// cpuMu serializes the CPU profiles: Go takes one at a time, so a phase that starts while
	// the previous phase's profile runs has its own start when that one ends.
	cpuMu sync.Mutex
}

// freeAddr returns a free loopback address for simhub's pprof endpoint.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer func() { _ = ln.Close() }()
	return "127.0.0.1:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), nil
}

// cpu fetches a CPU profile of d in the background, as run<N>-<phase>.cpu.pprof.
func (p *profiler) cpu(ctx context.Context, phase string, d time.Duration) {
	if p == nil {
		return
	}
	url := fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", p.base, int(d.Seconds()))
	p.wg.Go(func() {
		p.cpuMu.Lock()
		defer p.cpuMu.Unlock()
		p.fetch(ctx, url, fmt.Sprintf("run%d-%s.cpu.pprof", p.run, phase))
	})
}

// heap fetches a heap profile now, as run<N>-<phase>.heap.pprof.
func (p *profiler) heap(ctx context.Context, phase string) {
	if p == nil {
		return
	}
	p.fetch(ctx, p.base+"/debug/pprof/heap", fmt.Sprintf("run%d-%s.heap.pprof", p.run, phase))
}

// wait waits for the profiles still being taken.
func (p *profiler) wait() {
	if p != nil {
		p.wg.Wait()
	}
}

// fetch saves url's body as name in the profile directory; a failure is printed, not fatal:
// the figures do not depend on it.
func (p *profiler) fetch(ctx context.Context, url, name string) {
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		f, err := os.Create(filepath.Join(p.dir, name))
		if err != nil {
			return err
		}
		if _, err = io.Copy(f, resp.Body); err != nil {
			_ = f.Close()
			return err
		}
		return f.Close()
	}()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: profile %s: %v\n", name, err)
	}
}
