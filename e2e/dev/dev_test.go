//go:build e2e

// Package dev runs `rayfleet dev` end to end: `dev up --detach` brings up the local fleet in the
// background and returns once the sample RayService is Ready, `dev status` shows it, the
// kubeconfigs it leaves reach the hub and both members, and `dev down` stops every process it
// started and removes its state.
// It imports only shared/ (the local fleet, the scheme), never hub/, spoke/ or cmd/: it runs
// bin/rayfleet.
//
//	make build && RAYFLEET_BIN=$PWD/bin RAYFLEET_K8S_BIN=$PWD/bin/k8s go test -tags e2e ./e2e/dev/
package dev

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	rfscheme "github.com/rayfleet/rayfleet/shared/scheme"
)

const (
	// upTimeout bounds `dev up --detach`: the fleet, then the sample Ready (about 30 s warm).
	upTimeout = 10 * time.Minute
	// cmdTimeout bounds the other commands; `dev down` waits up to a minute for the supervisor.
	cmdTimeout = 2 * time.Minute
	// timeout and poll are the Eventually settings for what the fleet does on its own.
	timeout = 90 * time.Second
	poll    = 250 * time.Millisecond
)

// sample is the RayService `dev up` applies.
var sample = client.ObjectKey{Namespace: "demo", Name: "fruit"}

// components are the processes every dev fleet runs, by pid file name.
var components = []string{
	"supervisor", "hub-etcd", "hub-kube-apiserver", "hub-hub",
	"us-etcd", "us-kube-apiserver", "us-kube-scheduler", "us-kube-controller-manager", "us-kwok", "us-spoke",
	"eu-etcd", "eu-kube-apiserver", "eu-kube-scheduler", "eu-kube-controller-manager", "eu-kwok", "eu-spoke",
}

func TestDevUpStatusDown(t *testing.T) {
	g := gomega.NewWithT(t)
	state := filepath.Join(t.TempDir(), "state")
	base := freeBasePort(t)
	stateArgs := []string{"--state-dir", state}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(state, "logs", "*.log"))
			for _, l := range logs {
				data, _ := os.ReadFile(l)
				t.Logf("===== %s =====\n%s", l, lastLines(string(data), 40))
			}
		}
		// Whatever happened, leave nothing running.
		_, _, _ = rayfleet(t, cmdTimeout, append([]string{"dev", "down"}, stateArgs...)...)
	})

	begin := time.Now()
	code, out, errOut := rayfleet(t, upTimeout, append([]string{"dev", "up", "--detach", "--base-port", strconv.Itoa(base)}, stateArgs...)...)
	t.Logf("dev up --detach took %v:\n%s%s", time.Since(begin).Round(100*time.Millisecond), out, errOut)
	g.Expect(code).To(gomega.Equal(0), "dev up --detach")
	g.Expect(out).To(gomega.ContainSubstring("RayService demo/fruit is Ready on the hub"))
	g.Expect(out).To(gomega.ContainSubstring(filepath.Join(state, "kubeconfigs", "hub.kubeconfig")))

	code, _, errOut = rayfleet(t, cmdTimeout, append([]string{"dev", "up", "--detach", "--base-port", strconv.Itoa(base)}, stateArgs...)...)
	g.Expect(code).To(gomega.Equal(1), "a second dev up")
	g.Expect(errOut).To(gomega.ContainSubstring("a dev fleet is already running"))

	code, out, _ = rayfleet(t, cmdTimeout, append([]string{"dev", "status"}, stateArgs...)...)
	t.Logf("dev status:\n%s", out)
	g.Expect(code).To(gomega.Equal(0), "dev status")
	for _, c := range components {
		g.Expect(out).To(gomega.MatchRegexp(`(?m)^`+c+`\s+\d+\s+running$`), "component %s", c)
	}
	g.Expect(out).To(gomega.MatchRegexp(`demo/fruit\s+eu\s`))
	g.Expect(out).To(gomega.MatchRegexp(`demo/fruit\s+us\s`))

	checkClusters(t, state, base)
	for _, log := range []string{"hub-kube-apiserver.log", "hub-hub.log", "us-spoke.log", "eu-kwok.log", "join-us.log", "supervisor.log"} {
		g.Expect(filepath.Join(state, "logs", log)).To(gomega.BeAnExistingFile())
	}

	pids := recordedPIDs(t, state)
	g.Expect(pids).To(gomega.HaveLen(len(components)))
	code, out, errOut = rayfleet(t, cmdTimeout, append([]string{"dev", "down"}, stateArgs...)...)
	t.Logf("dev down:\n%s%s", out, errOut)
	g.Expect(code).To(gomega.Equal(0), "dev down")
	g.Expect(out).To(gomega.ContainSubstring("Stopped the dev fleet"))
	for name, p := range pids {
		g.Expect(p.running()).To(gomega.BeFalse(), "%s (pid %d) still runs after dev down", name, p.pid)
	}
	g.Expect(state).NotTo(gomega.BeAnExistingFile())

	code, out, _ = rayfleet(t, cmdTimeout, append([]string{"dev", "status"}, stateArgs...)...)
	g.Expect(code).To(gomega.Equal(1), "dev status with nothing running")
	g.Expect(out).To(gomega.ContainSubstring("No dev fleet is running"))
}

// checkClusters checks through the kubeconfigs `dev up` left that the hub, on the fixed base
// port, reports the sample Ready and that both members run a copy.
func checkClusters(t *testing.T, state string, base int) {
	t.Helper()
	g := gomega.NewWithT(t)
	hub, host := connect(t, filepath.Join(state, "kubeconfigs", "hub.kubeconfig"))
	g.Expect(host).To(gomega.Equal(fmt.Sprintf("https://127.0.0.1:%d", base)))
	var rs rayv1.RayService
	g.Expect(hub.Get(t.Context(), sample, &rs)).To(gomega.Succeed())
	g.Expect(meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue(),
		"hub RayService conditions %v", rs.Status.Conditions)
	for i, member := range []string{"us", "eu"} {
		cl, memberHost := connect(t, filepath.Join(state, "kubeconfigs", member+".kubeconfig"))
		g.Expect(memberHost).To(gomega.Equal(fmt.Sprintf("https://127.0.0.1:%d", base+1+i)))
		g.Eventually(func(g gomega.Gomega) {
			var placed rayv1.RayService
			g.Expect(cl.Get(t.Context(), sample, &placed)).To(gomega.Succeed())
			g.Expect(meta.IsStatusConditionTrue(placed.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue())
		}).WithTimeout(timeout).WithPolling(poll).Should(gomega.Succeed(), "RayService %s on member %s", sample, member)
	}
}

// connect builds a client from a kubeconfig, as kubectl --kubeconfig would use it.
func connect(t *testing.T, kubeconfig string) (client.Client, string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := rfscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return cl, cfg.Host
}

// rayfleet runs $RAYFLEET_BIN/rayfleet with the tools of $RAYFLEET_K8S_BIN and returns its exit
// code and output.
func rayfleet(t *testing.T, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(localfleet.DefaultRayFleetBin(), "rayfleet"), args...)
	cmd.Env = append(os.Environ(), "RAYFLEET_K8S_BIN="+localcluster.DefaultBinDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("rayfleet %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// freeBasePort finds a port after which the next two are free too.
func freeBasePort(t *testing.T) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if base+2 <= 65535 && free(base) && free(base+1) && free(base+2) {
			return base
		}
	}
	t.Fatal("no three consecutive free ports")
	return 0
}

func free(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// recorded is a process a pid file names, with its start time, so that a pid reused after it
// exited does not count as it.
type recorded struct {
	pid   int
	start string
}

// recordedPIDs reads the pid files (the pid is the first line) and each process's start time.
func recordedPIDs(t *testing.T, state string) map[string]recorded {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(state, "pids", "*.pid"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]recorded{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		pid, err := strconv.Atoi(first)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		state, start, ok := stat(pid)
		if !ok || state == "Z" {
			t.Fatalf("%s: pid %d does not run", f, pid)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".pid")] = recorded{pid: pid, start: start}
	}
	return out
}

// running reports whether the process still runs (a zombie does not).
func (r recorded) running() bool {
	state, start, ok := stat(r.pid)
	return ok && state != "Z" && start == r.start
}

// stat reads a process's state and start time from /proc/<pid>/stat.
func stat(pid int) (state, start string, ok bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", "", false
	}
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return "", "", false
	}
	fields := strings.Fields(string(data[end+1:]))
	if len(fields) < 20 {
		return "", "", false
	}
	return fields[0], fields[19], true
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
