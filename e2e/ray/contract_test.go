//go:build e2e

package ray

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/spoke/dashboard"
	"github.com/rayfleet/rayfleet/spoke/rayservice/serve"
)

// deployTimeout bounds a Serve deploy on the shared head: Serve's controller and proxy start
// with the first config, then the replica; about 10 s on 2 cores.
const deployTimeout = 90 * time.Second

// serveConfig is a RayService's serveConfigV2 for the versioned test app answering version at
// "/", with extra appended to the applications list.
func serveConfig(version, extra string) string {
	return `applications:
  - name: versioned
    import_path: versioned:build
    route_prefix: /
    args:
      version: "` + version + `"
    deployments:
      - name: Version
        num_replicas: 1
        ray_actor_options:
          num_cpus: 0.1
` + extra
}

// brokenApp is an application entry whose module raises at import.
const brokenApp = `  - name: broken
    import_path: broken:app
    route_prefix: /broken
`

// brokenMessage is what broken.py raises with.
const brokenMessage = "rayfleet test application: broken at import"

// newClient is the spoke's dashboard client for the head, made as the spoke makes it.
func newClient(t *testing.T) (dashboard.Factory, dashboard.Client) {
	t.Helper()
	f, err := dashboard.NewFactory(dashboard.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f, f.Dashboard(dashboardURL, "")
}

// submit converts serveConfigV2 with the spoke's own conversion and PUTs it until the dashboard
// takes it, as the reconciler does on its next reconciles: on a fresh head the first calls take
// longer than the client's 2 s (the dashboard connects to Ray on the first Serve call, and the
// first PUT starts Serve), and Ray finishes a call whose client gave up.
func submit(t *testing.T, g *gomega.WithT, c dashboard.Client, serveConfigV2 string, targetCapacity *int32) {
	t.Helper()
	body, err := serve.ConfigJSON(serveConfigV2, targetCapacity)
	if err != nil {
		t.Fatal(err)
	}
	retried(t, g, "PUT", func() error { return c.UpdateDeployments(t.Context(), body) })
}

// details GETs the Serve details, retried as submit retries.
func details(t *testing.T, g *gomega.WithT, c dashboard.Client) *dashboard.ServeDetails {
	t.Helper()
	var d *dashboard.ServeDetails
	retried(t, g, "GET", func() (err error) {
		d, err = c.ServeDetails(t.Context())
		return err
	})
	return d
}

// retried calls call until it succeeds, and logs the failed attempts.
func retried(t *testing.T, g *gomega.WithT, what string, call func() error) {
	t.Helper()
	start, failed := time.Now(), 0
	g.Eventually(func() error {
		err := call()
		if err != nil {
			failed++
			t.Logf("%s failed (the reconciler retries): %v", what, err)
		}
		return err
	}, deployTimeout, time.Second).Should(gomega.Succeed())
	if failed > 0 {
		t.Logf("%s succeeded after %d failed attempts, %s", what, failed, time.Since(start).Round(100*time.Millisecond))
	}
}

// TestHeadProbes: the liveness and readiness probes the builder gives the head Pod pass
// against the running head, run as the kubelet runs them (bash -c, or an HTTP GET).
func TestHeadProbes(t *testing.T) {
	c := theHead.pod.Spec.Containers[0]
	t.Run("liveness", func(t *testing.T) { checkProbe(t, c.LivenessProbe) })
	t.Run("readiness", func(t *testing.T) { checkProbe(t, c.ReadinessProbe) })
}

// probeAttempts is how many times in a row checkProbe lets a probe fail, fewer than any
// failure threshold the builder writes but the kubelet's tolerance in spirit: under load the
// dashboard's GCS check answers 503 now and then (it gives the GCS a second).
const probeAttempts = 5

// checkProbe runs probe against the head as the kubelet would, every PeriodSeconds, and fails t
// when it fails probeAttempts times in a row.
func checkProbe(t *testing.T, probe *corev1.Probe) {
	t.Helper()
	if probe == nil {
		t.Fatal("the builder wrote no probe")
	}
	timeout := time.Duration(probe.TimeoutSeconds) * time.Second
	run := func() error {
		switch {
		case probe.Exec != nil:
			argv := probe.Exec.Command
			ctx, cancel := context.WithTimeout(t.Context(), timeout)
			defer cancel()
			if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("probe %q: %w\n%s", argv, err, out)
			}
			return nil
		case probe.HTTPGet != nil:
			url := "http://127.0.0.1:" + probe.HTTPGet.Port.String() + probe.HTTPGet.Path
			return getOK(&http.Client{Timeout: timeout}, url)
		default:
			return fmt.Errorf("unexpected probe handler %+v", probe.ProbeHandler)
		}
	}
	failed := 0
	gomega.NewWithT(t).Eventually(func() error {
		err := run()
		if err != nil {
			failed++
			t.Logf("probe failed (%d of %d allowed): %v", failed, probeAttempts, err)
		}
		if failed >= probeAttempts {
			return gomega.StopTrying("the probe kept failing").Wrap(err)
		}
		return err
	}, time.Duration(probeAttempts*int(probe.PeriodSeconds+probe.TimeoutSeconds))*time.Second,
		time.Duration(probe.PeriodSeconds)*time.Second).Should(gomega.Succeed())
}

// TestServeLifecycle drives one Serve instance through what a RayService reconciler does to
// it, in order: read before any config, deploy, resubmit, update in place, a broken
// application, an invalid config.
func TestServeLifecycle(t *testing.T) {
	factory, client := newClient(t)

	t.Run("before Serve starts", func(t *testing.T) {
		g := gomega.NewWithT(t)
		d := details(t, g, client)
		if len(d.Applications) != 0 {
			t.Errorf("applications before any config: %+v", d.Applications)
		}
		t.Logf("deploy_mode before any config: %q", d.DeployMode)
		if err := factory.CheckProxyHealth(t.Context(), proxyURL); err == nil {
			t.Error("the Serve proxy is healthy before Serve started")
		}
	})

	t.Run("deploy", func(t *testing.T) {
		g := gomega.NewWithT(t)
		start := time.Now()
		submit(t, g, client, serveConfig("v1", ""), nil)
		seen := waitRunning(t, g, client, "versioned")
		t.Logf("statuses seen until RUNNING (%s): %s", time.Since(start).Round(100*time.Millisecond), strings.Join(seen, " → "))
		d := details(t, g, client)
		app := d.Applications["versioned"]
		// Ray leaves the deprecated deploy_mode out once Serve runs.
		if d.DeployMode != "" || app.Name != "versioned" || app.RoutePrefix != "/" ||
			app.Deployments["Version"].Status != dashboard.DeploymentStatusHealthy {
			t.Errorf("details = %+v", d)
		}
		if d.TargetCapacity != nil {
			t.Errorf("target capacity %v without one in the config", *d.TargetCapacity)
		}
		// A HEALTHY deployment runs num_replicas replicas, which the spoke counts for the hub.
		if dep := app.Deployments["Version"]; dep.TargetNumReplicas != 1 || runningReplicas(dep) != 1 {
			t.Errorf("Version: target_num_replicas %d, %d RUNNING; want 1 and 1 (replicas %+v)",
				dep.TargetNumReplicas, runningReplicas(dep), dep.Replicas)
		}
		g.Eventually(func() error { return factory.CheckProxyHealth(t.Context(), proxyURL) }, deployTimeout, time.Second).Should(gomega.Succeed())
		g.Eventually(answer, deployTimeout, time.Second).WithArguments(t, "/").Should(gomega.Equal(`{"version":"v1"}`))
		if raw, err := answerRaw(t, dashboardURL+"/api/serve/applications/?api_type=declarative"); err == nil {
			t.Logf("Serve details as Ray sends them: %.3000s", raw)
		}
		// A RayService worker's readiness probe checks its raylet and its Serve proxy ("success"
		// from /-/healthz on the serve port).
		checkProbe(t, theHead.worker.Spec.Containers[0].ReadinessProbe)
	})

	t.Run("resubmitting the same config redeploys nothing", func(t *testing.T) {
		g := gomega.NewWithT(t)
		submit(t, g, client, serveConfig("v1", ""), nil)
		// Ray marks the application DEPLOYING on every config it applies, an unchanged one
		// included, until its next control loop finds the deployments as they were; the
		// replica is not replaced, so the proxy answers throughout.
		seen := waitRunning(t, g, client, "versioned")
		t.Logf("statuses seen after resubmitting: %s", strings.Join(seen, " → "))
		for _, s := range seen {
			if s != "RUNNING Version:HEALTHY" && s != "DEPLOYING Version:HEALTHY" {
				t.Errorf("status after resubmitting the same config: %s", s)
			}
		}
		if got, err := answer(t, "/"); err != nil || got != `{"version":"v1"}` {
			t.Errorf("the proxy after resubmitting: %q, %v", got, err)
		}
	})

	t.Run("update in place with a target capacity", func(t *testing.T) {
		g := gomega.NewWithT(t)
		start := time.Now()
		submit(t, g, client, serveConfig("v2", ""), new(int32(100)))
		g.Eventually(answer, deployTimeout, 500*time.Millisecond).WithArguments(t, "/").Should(gomega.Equal(`{"version":"v2"}`))
		seen := waitRunning(t, g, client, "versioned")
		t.Logf("statuses seen until v2 answered and RUNNING (%s): %s", time.Since(start).Round(100*time.Millisecond), strings.Join(seen, " → "))
		d := details(t, g, client)
		if d.TargetCapacity == nil || *d.TargetCapacity != 100 {
			t.Errorf("target capacity = %v, want 100", d.TargetCapacity)
		}
		// The replaced replica may still be STOPPING; only its successor is RUNNING.
		g.Eventually(func(g gomega.Gomega) {
			d, err := client.ServeDetails(t.Context())
			g.Expect(err).NotTo(gomega.HaveOccurred())
			dep := d.Applications["versioned"].Deployments["Version"]
			g.Expect(dep.TargetNumReplicas).To(gomega.BeEquivalentTo(1))
			g.Expect(runningReplicas(dep)).To(gomega.Equal(1), "replicas %+v", dep.Replicas)
		}, deployTimeout, time.Second).Should(gomega.Succeed())
	})

	t.Run("an application raising at import is DEPLOY_FAILED with Ray's message", func(t *testing.T) {
		g := gomega.NewWithT(t)
		submit(t, g, client, serveConfig("v2", brokenApp), nil)
		var apps map[string]string
		g.Eventually(func(g gomega.Gomega) {
			d, err := client.ServeDetails(t.Context())
			g.Expect(err).NotTo(gomega.HaveOccurred())
			apps = map[string]string{}
			for name, app := range d.Applications {
				apps[name] = app.Status
			}
			g.Expect(d.Applications).To(gomega.HaveKey("broken"))
			g.Expect(d.Applications["broken"].Status).To(gomega.Equal(dashboard.AppStatusDeployFailed))
		}, deployTimeout, time.Second).Should(gomega.Succeed())
		d := details(t, g, client)
		statuses, ready := serve.Applications(d)
		if ready {
			t.Error("a cluster with a DEPLOY_FAILED application counts as ready")
		}
		if got := statuses["versioned"].Status; got != dashboard.AppStatusRunning {
			t.Errorf("the healthy application next to the broken one: %s", got)
		}
		msg := statuses["broken"].Message
		if !strings.Contains(msg, brokenMessage) {
			t.Errorf("DEPLOY_FAILED message does not carry the exception:\n%s", msg)
		}
		t.Logf("Ray's DEPLOY_FAILED message (%d bytes):\n%s", len(msg), msg)
		failing := serve.Failing(statuses)
		if len(failing) != 1 || failing[0].Name != "broken" || !strings.Contains(failing[0].Message, brokenMessage) {
			t.Errorf("serve.Failing = %+v, want broken with %q in its message", failing, brokenMessage)
		}
	})

	t.Run("an invalid config is refused with Ray's reason", func(t *testing.T) {
		err := client.UpdateDeployments(t.Context(), []byte(`{"applications":[{"name":"a"}]}`))
		se, ok := errors.AsType[*dashboard.StatusError](err)
		if !ok {
			t.Fatalf("UpdateDeployments: %v, want a StatusError", err)
		}
		t.Logf("invalid config: HTTP %d: %s", se.StatusCode, se.Body)
		if se.StatusCode != http.StatusBadRequest || !strings.Contains(se.Body, "import_path") {
			t.Errorf("UpdateDeployments: %v, want a 400 naming import_path", err)
		}
	})
}

// waitRunning polls the details until app is RUNNING, and returns the distinct statuses it
// saw, in order ("app:STATUS deployment:STATUS").
func waitRunning(t *testing.T, g *gomega.WithT, c dashboard.Client, app string) []string {
	t.Helper()
	var seen []string
	g.Eventually(func(g gomega.Gomega) {
		d, err := c.ServeDetails(t.Context())
		g.Expect(err).NotTo(gomega.HaveOccurred())
		a, ok := d.Applications[app]
		state := "absent"
		if ok {
			state = a.Status
			for name, dep := range a.Deployments {
				state += " " + name + ":" + dep.Status
			}
		}
		if len(seen) == 0 || seen[len(seen)-1] != state {
			seen = append(seen, state)
		}
		g.Expect(a.Status).To(gomega.Equal(dashboard.AppStatusRunning))
	}, deployTimeout, 200*time.Millisecond).Should(gomega.Succeed())
	return seen
}

// answer GETs path on the Serve proxy and returns the body of a 200, JSON re-encoded, else an
// error.
func answer(t *testing.T, path string) (string, error) {
	body, err := answerRaw(t, proxyURL+path)
	if err != nil {
		return "", err
	}
	var v map[string]string
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		return body, nil
	}
	out, _ := json.Marshal(v)
	return string(out), nil
}

// answerRaw GETs url and returns the body of a 200, else an error.
func answerRaw(t *testing.T, url string) (string, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(resp.Status + ": " + string(body))
	}
	return string(body), nil
}

// runningReplicas counts dep's replicas in state RUNNING.
func runningReplicas(dep dashboard.DeploymentDetails) int {
	n := 0
	for _, r := range dep.Replicas {
		if r.State == dashboard.ReplicaStateRunning {
			n++
		}
	}
	return n
}
