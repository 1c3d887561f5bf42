package raydashboard

import (
	"fmt"
	"math"
	"net/http"
	"time"
)

// Ray's status values, as the dashboard spells them.
const (
	appNotStarted   = "NOT_STARTED"
	appDeploying    = "DEPLOYING"
	appRunning      = "RUNNING"
	appDeployFailed = "DEPLOY_FAILED"
	appUnhealthy    = "UNHEALTHY"

	deploymentUpdating     = "UPDATING"
	deploymentHealthy      = "HEALTHY"
	deploymentUnhealthy    = "UNHEALTHY"
	deploymentDeployFailed = "DEPLOY_FAILED"
)

// notStartedShare is the part of DeployDelay an application spends NOT_STARTED before it
// turns DEPLOYING: Ray reports NOT_STARTED only until the controller picks the config up.
const notStartedShare = 10

// Cluster is one Ray cluster of the stand-in: its Serve config, applications, counters and
// fault. Every method is safe for concurrent use.
type Cluster struct {
	srv             *Server
	namespace, name string

	// Guarded by srv.mu.
	config      *serveConfig
	apps        map[string]*deployedApp
	submissions int
	requests    map[string]int
	fault       Fault
	lastAuth    string
}

// deployedApp is an application of the current config and when its current version was
// submitted, the start of its transition to RUNNING.
type deployedApp struct {
	cfg        appConfig
	deployedAt time.Time
	// reappliedAt is when the same entry was last submitted again; zero if never.
	reappliedAt time.Time
}

// Fault is what a cluster does wrong, from now until the next SetFault.
type Fault struct {
	// DeployFailed: apps go DEPLOY_FAILED (with a message) instead of RUNNING. Read with the
	// status, so clearing it lets them report RUNNING again, as after a successful retry.
	DeployFailed bool
	// Unhealthy: running apps report UNHEALTHY.
	Unhealthy bool
	// HTTPStatus, when non-zero: every dashboard call answers this status (e.g. 500) with a body.
	// The proxy's health endpoint is not a dashboard call.
	HTTPStatus int
	// Latency: every call, the proxy's included, waits this long first (honouring request ctx
	// cancellation), on the server's clock.
	Latency time.Duration
	// ProxyUnhealthy: /-/healthz answers 503.
	ProxyUnhealthy bool
}

// SetFault replaces the cluster's fault; the zero Fault clears it.
func (c *Cluster) SetFault(f Fault) {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	c.fault = f
}

// Config is the last accepted config (nil if none), a fresh copy for every call.
func (c *Cluster) Config() map[string]any {
	c.srv.mu.Lock()
	cfg := c.config
	c.srv.mu.Unlock()
	return cfg.document()
}

// TargetCapacity is the target_capacity of the last accepted config, rounded; nil when that
// config had none or there is none.
func (c *Cluster) TargetCapacity() *int32 {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.targetCapacityLocked()
}

// targetCapacityLocked is TargetCapacity with srv.mu held.
func (c *Cluster) targetCapacityLocked() *int32 {
	if c.config == nil || c.config.targetCapacity == nil {
		return nil
	}
	v := int32(math.Round(*c.config.targetCapacity))
	return &v
}

// Submissions is the number of accepted PUTs.
func (c *Cluster) Submissions() int {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.submissions
}

// Requests is the number of requests for op ("update_deployments", "serve_details",
// "proxy_health", "delete_applications"), faulted and rejected ones included.
func (c *Cluster) Requests(op string) int {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.requests[op]
}

// LastAuthorization is the x-ray-authorization header of the last dashboard request ("Bearer
// <token>"), empty when it had none. The stand-in does not check tokens; tests check that the
// client sent the right one.
func (c *Cluster) LastAuthorization() string {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.lastAuth
}

// Reset forgets the config and the applications, as a head Pod restart without GCS fault
// tolerance does; the counters and the fault stay.
func (c *Cluster) Reset() {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	c.config = nil
	c.apps = nil
}

// AppStatuses is the current status of every application, by name.
func (c *Cluster) AppStatuses() map[string]string {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	return c.appStatusesLocked()
}

// appStatusesLocked is AppStatuses with srv.mu held.
func (c *Cluster) appStatusesLocked() map[string]string {
	now := c.srv.clock.Now()
	out := make(map[string]string, len(c.apps))
	for name, app := range c.apps {
		out[name] = c.appStateLocked(app, now).status
	}
	return out
}

// apply makes cfg the cluster's config at now. An application whose entry is unchanged keeps
// its transition (a config that differs only in target_capacity redeploys nothing) but, as in
// Ray, reports DEPLOYING for a moment (see appStateLocked); a new or changed one starts over;
// one no longer listed is gone.
func (c *Cluster) apply(cfg *serveConfig, now time.Time) {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	apps := make(map[string]*deployedApp, len(cfg.apps))
	for _, a := range cfg.apps {
		if old, ok := c.apps[a.name]; ok && old.cfg.fingerprint == a.fingerprint {
			apps[a.name] = &deployedApp{cfg: a, deployedAt: old.deployedAt, reappliedAt: now}
			continue
		}
		apps[a.name] = &deployedApp{cfg: a, deployedAt: now}
	}
	c.config = cfg
	c.apps = apps
	c.submissions++
}

// appState is an application's status at some instant.
type appState struct {
	status, message string
	// deploymentStatus is every deployment's status; empty while none exists yet.
	deploymentStatus, deploymentMessage string
}

// appStateLocked computes app's state at now from its submission time and the fault.
func (c *Cluster) appStateLocked(app *deployedApp, now time.Time) appState {
	delay := c.srv.deployDelay
	elapsed := now.Sub(app.deployedAt)
	switch {
	case elapsed < delay/notStartedShare:
		return appState{status: appNotStarted}
	case elapsed < delay:
		return appState{status: appDeploying, deploymentStatus: deploymentUpdating}
	case now.Sub(app.reappliedAt) < delay/notStartedShare:
		// Ray marks an application DEPLOYING whenever a config is applied to it, an unchanged
		// one included, until its next control loop finds its deployments as they were
		// (0.3 s on a loaded 2-core machine, e2e/ray); the deployments stay as they are.
		return appState{status: appDeploying, deploymentStatus: deploymentHealthy}
	case c.fault.DeployFailed:
		return appState{status: appDeployFailed, message: deployFailedMessage(app.cfg.name),
			deploymentStatus: deploymentDeployFailed, deploymentMessage: "The replicas failed to start: injected fault."}
	case c.fault.Unhealthy:
		msg := fmt.Sprintf("The deployments of application %q are UNHEALTHY: injected fault.", app.cfg.name)
		return appState{status: appUnhealthy, message: msg,
			deploymentStatus: deploymentUnhealthy, deploymentMessage: "The replicas failed their health checks: injected fault."}
	default:
		return appState{status: appRunning, deploymentStatus: deploymentHealthy}
	}
}

// deployFailedMessage is an application's DEPLOY_FAILED message in Ray's shape: a first line
// naming the application, a Python traceback, and the exception last, which is what a reader
// of the message has to find (Ray 2.52, e2e/ray).
func deployFailedMessage(app string) string {
	return fmt.Sprintf("Deploying app '%s' failed with exception:\n"+
		"Traceback (most recent call last):\n"+
		"  File \"/home/ray/serve_app.py\", line 1, in <module>\n"+
		"    raise RuntimeError(\"injected DEPLOY_FAILED fault\")\n"+
		"RuntimeError: injected DEPLOY_FAILED fault\n", app)
}

// updateDeployments serves PUT /api/serve/applications/.
func (c *Cluster) updateDeployments(w http.ResponseWriter, body []byte) {
	cfg, err := parseServeConfig(body)
	if err != nil {
		http.Error(w, "invalid Serve config: "+err.Error(), http.StatusBadRequest)
		return
	}
	c.apply(cfg, c.srv.clock.Now())
	w.WriteHeader(http.StatusOK)
}

// proxyHealth serves the proxy's /-/healthz. Ray starts the proxies with Serve, so the port is
// closed until a config was accepted; the stand-in answers 503 in that case.
func (c *Cluster) proxyHealth(w http.ResponseWriter) {
	c.srv.mu.Lock()
	running, unhealthy := c.config != nil, c.fault.ProxyUnhealthy
	c.srv.mu.Unlock()
	switch {
	case !running:
		http.Error(w, "Serve is not running on this cluster: no proxy listens yet.", http.StatusServiceUnavailable)
	case unhealthy:
		http.Error(w, "This node is being drained.", http.StatusServiceUnavailable)
	default:
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("success"))
	}
}
