package localcluster

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeManagerEnv makes the test binary act as a manager (fakeManager) instead of running the
// tests: the first start, while the file it names does not exist, creates it and fails as a
// manager does whose port another process took; later starts serve /readyz and /metrics on
// the ports given.
const fakeManagerEnv = "LOCALCLUSTER_FAKE_MANAGER_MARKER"

func TestMain(m *testing.M) {
	if marker := os.Getenv(fakeManagerEnv); marker != "" {
		fakeManager(marker)
	}
	os.Exit(m.Run())
}

// TestStartManagerPicksNewPortsWhenOneWasTaken starts a manager whose first start finds a
// port taken: StartManager starts it again on new ports, and the manager returned serves.
func TestStartManagerPicksNewPortsWhenOneWasTaken(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	marker := filepath.Join(t.TempDir(), "started-once")
	m, err := c.StartManager(t.Context(), "fake", os.Args[0], "/nonexistent", nil, []string{fakeManagerEnv + "=" + marker})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	resp, err := http.Get(m.MetricsURL)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", m.MetricsURL, resp.Status)
	}
	log, err := os.ReadFile(m.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(log), "address already in use"); got != 1 {
		t.Errorf("the log holds %d failed starts, want 1:\n%s", got, log)
	}
}

// TestStartManagerGivesUpOnOtherFailures does not retry a manager that fails for another
// reason than a taken port.
func TestStartManagerGivesUpOnOtherFailures(t *testing.T) {
	c := &Cluster{Dir: t.TempDir()}
	bin := filepath.Join(t.TempDir(), "fails")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho bad flag\nexit 2\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := c.StartManager(t.Context(), "fails", bin, "/nonexistent", nil, nil)
	if err == nil || errors.Is(err, errPortTaken) {
		t.Fatalf("StartManager = %v, want a failure that is not a taken port", err)
	}
	log, err := os.ReadFile(filepath.Join(c.Dir, "fails.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(log), "bad flag"); got != 1 {
		t.Errorf("started %d times, want once", got)
	}
}

// fakeManager is the manager TestStartManagerPicksNewPortsWhenOneWasTaken starts.
func fakeManager(marker string) {
	if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		fmt.Println("failed to create listener: listen tcp 127.0.0.1:1: bind: address already in use")
		os.Exit(1)
	}
	var addrs []string
	for _, a := range os.Args[1:] {
		for _, flag := range []string{"--metrics-bind-address=", "--health-probe-bind-address="} {
			if v, ok := strings.CutPrefix(a, flag); ok {
				addrs = append(addrs, v)
			}
		}
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	errs := make(chan error, len(addrs))
	for _, addr := range addrs {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Println(err)
			os.Exit(2)
		}
		go func() { errs <- http.Serve(l, ok) }() //nolint:gosec // a test's stand-in
	}
	fmt.Println(<-errs)
	os.Exit(2)
}
