package raydashboard

import (
	"encoding/json"
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
		Name     string `json:"name"`
		Status   string `json:"status"`
		Message  string `json:"message"`
		Replicas []any  `json:"replicas"`
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
			deployments[d] = deploymentDetailsJSON{
				Name: d, Status: state.deploymentStatus, Message: state.deploymentMessage, Replicas: []any{},
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
