//go:build e2e

// Package ray holds the contract tests of the spoke's Ray clients against real Ray: one Ray head
// (ray[serve], installed by `make ray` into bin/ray), started with the `ray start` command line
// and probes the spoke's builder writes for a head Pod, inside a network namespace of its own
// (`unshare -n`, which needs root), so that Ray's ports (6379, 8265, 52365, 8000...) bind on the
// namespace's loopback only and never clash with another head on the machine. The tests drive
// the spoke's own dashboard client, Serve config conversion and status reading against it.
//
// Every test shares the one head; its applications are the test Serve apps in
// shared/localfleet/rayapp/serveapp, importable from the head's PYTHONPATH without fetching anything.
//
//	make ray build && go test -tags e2e ./e2e/ray/   # Ray from bin/ray
//	RAYFLEET_E2E_RAY_FIGURES=1 go test -tags e2e -v … # also measure the idle head's CPU
//	RAYFLEET_E2E_KEEP=1 go test -tags e2e …            # keep the head's temp dir (logs)
package ray

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// netnsEnv is set to "1" in the re-executed test binary that runs inside the network namespace.
const netnsEnv = "RAYFLEET_E2E_RAY_NETNS"

// rayVersion is the Ray that `make ray` installs and that the head's RayCluster declares; it
// decides which probes the builder writes (exec'd wget before 2.53).
const rayVersion = "2.52.0"

// The head's ports: the defaults the builder writes, on the namespace's loopback.
const (
	dashboardURL = "http://127.0.0.1:8265"
	agentURL     = "http://127.0.0.1:52365"
	proxyURL     = "http://127.0.0.1:8000"
)

// headStartTimeout bounds `ray start` until the dashboard answers: its start is mostly Python
// imports in a dozen processes: 18 s on 2 cores, 117 s under a load average of 50.
const headStartTimeout = 4 * time.Minute

// theHead is the head every test uses, started by TestMain.
var theHead *head

func TestMain(m *testing.M) {
	if os.Getenv(netnsEnv) != "1" {
		os.Exit(inNetworkNamespace())
	}
	os.Exit(run(m))
}

// netnsSetup prepares the namespace: loopback up and a default route through it, so that Ray's
// node IP detection (a UDP "connect" to a public address) finds 127.0.0.1.
const netnsSetup = "ip link set lo up && ip route add default dev lo"

// inNetworkNamespace runs this test binary again, with the same arguments, inside a new network
// namespace and returns its exit code. When the namespace cannot be made, the package fails
// saying so: skipping would hide that the client never met Ray.
func inNetworkNamespace() int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "FAIL e2e/ray: "+format+"\n", args...)
		return 1
	}
	if os.Geteuid() != 0 {
		return fail("the tests run Ray in a network namespace of their own (unshare -n), which needs root; running as uid %d", os.Geteuid())
	}
	for _, tool := range []string{"unshare", "ip", "sh"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fail("%s is needed to make the tests' network namespace: %v", tool, err)
		}
	}
	if out, err := exec.Command("unshare", "-n", "--", "sh", "-c", netnsSetup).CombinedOutput(); err != nil {
		return fail("cannot make the tests' network namespace (unshare -n -- sh -c %q): %v\n%s", netnsSetup, err, out)
	}
	args := append([]string{"-n", "--", "sh", "-c", netnsSetup + ` && exec "$0" "$@"`}, os.Args...)
	cmd := exec.Command("unshare", args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), netnsEnv+"=1")
	err := cmd.Run()
	if exitErr, ok := errors.AsType[*exec.ExitError](err); ok {
		return exitErr.ExitCode()
	}
	if err != nil {
		return fail("running the tests in their network namespace: %v", err)
	}
	return 0
}

// run starts the head, runs the tests and stops the head; inside the network namespace.
func run(m *testing.M) int {
	// Ray's daemons that outlive their parent are reparented to this process rather than to
	// init, so that stopping the head finds and ends every one of them.
	if err := setChildSubreaper(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e/ray:", err)
		return 1
	}
	h, err := startHead()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e/ray: starting the Ray head:", err)
		if h != nil {
			h.stop()
		}
		return 1
	}
	theHead = h
	code := m.Run()
	h.stop()
	return code
}

// head is a running `ray start --head --block`.
type head struct {
	cmd     *exec.Cmd
	tempDir string
	// pod is the head Pod the builder made, whose command and probes the head runs.
	pod *corev1.Pod
	// worker is a worker Pod of the same cluster, whose probes check the raylet and the Serve
	// proxy on whatever node they run: the head's serve them too.
	worker *corev1.Pod
	// exited is closed when the `ray start` process has exited.
	exited chan struct{}
}

// rayBinDir is the directory holding bin/ray's virtual environment: $RAYFLEET_BIN/ray (default
// bin/ray in the repository) links to <venv>/bin/ray.
func rayBinDir() (string, error) {
	dir := os.Getenv("RAYFLEET_BIN")
	if dir == "" {
		root, err := localcluster.RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	ray, err := filepath.EvalSymlinks(filepath.Join(dir, "ray"))
	if err != nil {
		return "", fmt.Errorf("no Ray in %s (run `make ray`): %w", dir, err)
	}
	return filepath.Dir(ray), nil
}

// serveAppDir is shared/localfleet/rayapp/serveapp, the test Serve applications.
func serveAppDir() (string, error) {
	root, err := localcluster.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "shared", "localfleet", "rayapp", "serveapp"), nil
}

// headCluster is the RayCluster whose head the tests run, one a RayService made (which gives its
// containers RayService's Ray settings and its workers the Serve readiness check). Its sizing is
// what a head on this machine affords: one logical CPU (Serve's controller and proxy take none,
// a replica 0.1) and a 100 MiB object store, which the Serve apps never fill. Its worker group
// is never started: the tests run the workers' probes against the head.
func headCluster(tempDir string) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "contract", Namespace: "e2e",
			Labels: map[string]string{labels.OriginatedFromCRD: "RayService"}},
		Spec: rayv1.RayClusterSpec{
			RayVersion: rayVersion,
			HeadGroupSpec: rayv1.HeadGroupSpec{
				RayStartParams: map[string]string{
					"num-cpus":            "1",
					"object-store-memory": "104857600",
					"node-ip-address":     "127.0.0.1",
					// A short path: Ray's Unix sockets live under it, and their paths are capped
					// at 107 bytes. It also keeps this head's session apart from any other.
					"temp-dir": tempDir,
				},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "ray-head", Image: "rayproject/ray:" + rayVersion,
				}}}},
			},
			WorkerGroupSpecs: []rayv1.WorkerGroupSpec{{
				GroupName: "workers", RayStartParams: map[string]string{},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "ray-worker", Image: "rayproject/ray:" + rayVersion,
				}}}},
			}},
		},
	}
}

// startHead runs the head Pod's container command, as the builder wrote it, with the
// virtualenv's ray first on PATH and the test Serve apps on PYTHONPATH, and waits until the
// dashboard answers. A non-nil head comes back with an error when it must be stopped.
func startHead() (*head, error) {
	binDir, err := rayBinDir()
	if err != nil {
		return nil, err
	}
	apps, err := serveAppDir()
	if err != nil {
		return nil, err
	}
	tempDir, err := os.MkdirTemp("", "ray")
	if err != nil {
		return nil, err
	}
	rc := headCluster(tempDir)
	pod, err := builder.HeadPod(rc, builder.DefaultOptions())
	if err != nil {
		return nil, err
	}
	worker, err := builder.WorkerPod(rc, &rc.Spec.WorkerGroupSpecs[0], builder.Replica{}, builder.DefaultOptions())
	if err != nil {
		return nil, err
	}
	c := pod.Spec.Containers[0]
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(argv) == 0 {
		return nil, errors.New("the builder's head container has no command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = headEnv(c.Env, binDir, apps)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logFile, err := os.Create(filepath.Join(tempDir, "ray-start.log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	fmt.Printf("e2e/ray: %s\n", strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	h := &head{cmd: cmd, tempDir: tempDir, pod: pod, worker: worker, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(h.exited)
	}()
	if err := h.waitReady(headStartTimeout); err != nil {
		return h, err
	}
	ready := time.Since(start)
	rss, pss := h.memory()
	fmt.Printf("e2e/ray: Ray %s head ready in %s (dashboard and agent answering); its processes take %d MiB (PSS; RSS summed %d MiB)\n",
		rayVersion, ready.Round(100*time.Millisecond), pss>>20, rss>>20)
	if os.Getenv("RAYFLEET_E2E_RAY_FIGURES") != "" {
		fmt.Printf("e2e/ray: idle head CPU over 10 s: %.1f%% of one core\n", h.idleCPU(10*time.Second))
	}
	return h, nil
}

// headEnv is the test's environment with the container's literal env vars (those from a field
// or a Secret have no meaning outside a Pod), the virtualenv first on PATH, the test apps on
// PYTHONPATH, and Ray's usage stats off (nothing but loopback is reachable anyway).
func headEnv(env []corev1.EnvVar, binDir, apps string) []string {
	out := os.Environ()
	for _, e := range env {
		if e.ValueFrom == nil {
			out = append(out, e.Name+"="+e.Value)
		}
	}
	return append(out,
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PYTHONPATH="+apps,
		"RAY_USAGE_STATS_ENABLED=0",
		// The dashboard starts nine Python module processes at once and gives each 30 s to
		// report ready, which a loaded 2-core machine misses; a head that gives up serves no
		// dashboard at all.
		"RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT=150",
	)
}

// waitReady polls the dashboard's GCS health and the agent's raylet health until both answer
// 200, the head exits or timeout passes.
func (h *head) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-h.exited:
			return fmt.Errorf("ray start exited: %v; see %s", h.cmd.ProcessState, filepath.Join(h.tempDir, "ray-start.log"))
		case <-time.After(250 * time.Millisecond):
		}
		last = nil
		for _, url := range []string{dashboardURL + "/api/gcs_healthz", agentURL + "/api/local_raylet_healthz"} {
			if err := getOK(client, url); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			return nil
		}
	}
	return fmt.Errorf("the head did not answer within %s: %v; see %s", timeout, last, filepath.Join(h.tempDir, "ray-start.log"))
}

// getOK GETs url and wants a 200.
func getOK(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// stop ends the head: SIGTERM to `ray start --block` (which stops Ray's processes), then
// SIGKILL to every process of the head still alive after a grace period, and removes the temp
// dir unless RAYFLEET_E2E_KEEP is set.
func (h *head) stop() {
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(20 * time.Second):
		fmt.Fprintln(os.Stderr, "e2e/ray: ray start did not stop within 20 s of SIGTERM; killing it")
	}
	// This process is their subreaper, so Ray's processes are its descendants even when their
	// parents exited first.
	for _, pid := range descendants(os.Getpid()) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
	if os.Getenv("RAYFLEET_E2E_KEEP") != "" {
		fmt.Println("e2e/ray: the head's temp dir (logs):", h.tempDir)
		return
	}
	_ = os.RemoveAll(h.tempDir)
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER (linux/prctl.h).
const prSetChildSubreaper = 36

// setChildSubreaper makes this process the reaper of its orphaned descendants.
func setChildSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}
