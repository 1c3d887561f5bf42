package raydashboard

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// The JSON of GET /api/serve/applications/, Ray's ServeInstanceDetails with the fields a client
// may read; the ones the stand-in has no value for are empty.
type (
	serveDetailsJSON struct {
		// DeployMode is deprecated in Ray, which sends it only while Serve is not running.
		DeployMode     string                    `json:"deploy_mode,omitempty"`
		TargetCapacity *float64                  `json:"target_capacity"`
		ControllerInfo map[string]any            `json:"controller_info"`
		ProxyLocation  any                       `json:"proxy_location,omitempty"`
		HTTPOptions    any                       `json:"http_options,omitempty"`
		Proxies        map[string]any            `json:"proxies"`
		Applications   map[string]appDetailsJSON `json:"applications"`
	}
	appDetailsJSON struct {
		Name              string                           `json:"name"`
		RoutePrefix       *string                          `json:"route_prefix"`
		DocsPath          *string                          `json:"docs_path"`
		Status            string                           `json:"status"`
		Message           string                           `json:"message"`
		LastDeployedTimeS float64                          `json:"last_deployed_time_s"`
		DeployedAppConfig map[string]any                   `json:"deployed_app_config"`
		Source            string                           `json:"source"`
		Deployments       map[string]deploymentDetailsJSON `json:"deployments"`
	}
	deploymentDetailsJSON struct {
		Name              string               `json:"name"`
		Status            string               `json:"status"`
		Message           string               `json:"message"`
		TargetNumReplicas int                  `json:"target_num_replicas"`
		Replicas          []replicaDetailsJSON `json:"replicas"`
	}
	replicaDetailsJSON struct {
		ReplicaID  string  `json:"replica_id"`
		State      string  `json:"state"`
		ActorName  string  `json:"actor_name"`
		StartTimeS float64 `json:"start_time_s"`
	}
)

// Values Ray reports for a Serve instance started without proxy_location or http_options.
var (
	defaultProxyLocation = "EveryNode"
	defaultHTTPOptions   = map[string]any{"host": "0.0.0.0", "port": 8000, "root_path": "", "keep_alive_timeout_s": 90}
)

// serveDetails serves GET /api/serve/applications/. Only declarative applications exist here,
// so api_type=imperative lists none; an unknown api_type is a 400, as in Ray.
func (c *Cluster) serveDetails(w http.ResponseWriter, r *http.Request) {
	declarative := true
	switch apiType := r.URL.Query().Get("api_type"); apiType {
	case "", "declarative":
	case "imperative":
		declarative = false
	default:
		http.Error(w, "Invalid 'api_type' value "+apiType+"; expected one of: declarative, imperative", http.StatusBadRequest)
		return
	}
	body, err := json.Marshal(c.details(declarative))
	if err != nil {
		http.Error(w, "encode Serve details: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// details builds the Serve instance's details at the current time. Before any config, and after
// Reset, it is Ray's empty instance: MULTI_APP with no applications; once Serve runs, Ray 2.52
// leaves deploy_mode out (e2e/ray).
func (c *Cluster) details(declarative bool) serveDetailsJSON {
	c.srv.mu.Lock()
	defer c.srv.mu.Unlock()
	out := serveDetailsJSON{
		ControllerInfo: map[string]any{},
		Proxies:        map[string]any{},
		Applications:   map[string]appDetailsJSON{},
	}
	if c.config == nil {
		out.DeployMode = "MULTI_APP"
		return out
	}
	out.TargetCapacity = c.config.targetCapacity
	out.ProxyLocation, out.HTTPOptions = defaultProxyLocation, defaultHTTPOptions
	if c.config.proxyLocation != nil {
		out.ProxyLocation = c.config.proxyLocation
	}
	if c.config.httpOptions != nil {
		out.HTTPOptions = c.config.httpOptions
	}
	if !declarative {
		return out
	}
	now := c.srv.clock.Now()
	for name, app := range c.apps {
		out.Applications[name] = c.appDetailsLocked(app, now)
	}
	return out
}

// appDetailsLocked is one application's details at now, with srv.mu held.
func (c *Cluster) appDetailsLocked(app *deployedApp, now time.Time) appDetailsJSON {
	state := c.appStateLocked(app, now)
	deployments := map[string]deploymentDetailsJSON{}
	if state.deploymentStatus != "" {
		for _, d := range app.cfg.deployments {
			n := app.cfg.replicas[d]
			deployments[d] = deploymentDetailsJSON{
				Name: d, Status: state.deploymentStatus, Message: state.deploymentMessage,
				TargetNumReplicas: n, Replicas: replicas(app, d, replicaState(state.deploymentStatus), n),
			}
		}
	}
	return appDetailsJSON{
		Name:              app.cfg.name,
		RoutePrefix:       app.cfg.routePrefix,
		Status:            state.status,
		Message:           state.message,
		LastDeployedTimeS: float64(app.deployedAt.UnixNano()) / float64(time.Second),
		DeployedAppConfig: app.cfg.spec,
		Source:            "declarative",
		Deployments:       deployments,
	}
}

// Replica states the stand-in reports, Ray's ReplicaState values.
const (
	replicaStarting = "STARTING"
	replicaRunning  = "RUNNING"
)

// replicaState is the state of every replica of a deployment in status: RUNNING once HEALTHY
// (the stand-in's deployments reach num_replicas at once, and target_capacity does not scale
// them), STARTING while they are created or replace failed ones, none after a failed deploy.
func replicaState(status string) string {
	switch status {
	case deploymentHealthy:
		return replicaRunning
	case deploymentUpdating, deploymentUnhealthy:
		return replicaStarting
	default:
		return ""
	}
}

// replicas lists n replicas of deployment d of app in state; an empty list without a state.
func replicas(app *deployedApp, d, state string, n int) []replicaDetailsJSON {
	out := []replicaDetailsJSON{}
	if state == "" {
		return out
	}
	start := float64(app.deployedAt.UnixNano()) / float64(time.Second)
	for i := range n {
		id := fmt.Sprintf("%s-r%d", d, i)
		out = append(out, replicaDetailsJSON{
			ReplicaID:  id,
			State:      state,
			ActorName:  fmt.Sprintf("SERVE_REPLICA::%s#%s#%s", app.cfg.name, d, id),
			StartTimeS: start,
		})
	}
	return out
}
