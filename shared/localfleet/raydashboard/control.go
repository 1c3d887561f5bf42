package raydashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// maxControlBytes bounds a control request body.
const maxControlBytes = 1 << 20

// ClusterState is what GET /_control/clusters/<ns>/<name> answers.
type ClusterState struct {
	// Namespace and Name identify the Ray cluster.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Config is the last accepted config, nil if none.
	Config map[string]any `json:"config"`
	// TargetCapacity is the last accepted config's target_capacity, rounded.
	TargetCapacity *int32 `json:"targetCapacity"`
	// Submissions is the number of accepted PUTs.
	Submissions int `json:"submissions"`
	// Requests counts the requests by operation (Op* constants).
	Requests map[string]int `json:"requests"`
	// Applications is every application's current status, by name.
	Applications map[string]string `json:"applications"`
	// Fault is the cluster's current fault.
	Fault Fault `json:"fault"`
	// LastAuthorization is Cluster.LastAuthorization.
	LastAuthorization string `json:"lastAuthorization"`
}

// State is the cluster's state as the control API reports it, taken at one instant.
func (c *Cluster) State() ClusterState {
	c.srv.mu.Lock()
	st := ClusterState{
		Namespace:      c.namespace,
		Name:           c.name,
		Applications:   c.appStatusesLocked(),
		TargetCapacity: c.targetCapacityLocked(),
		Submissions:    c.submissions,
		Requests:       make(map[string]int, len(c.requests)),
		Fault:          c.fault,
		// The stand-in checks no token, so the one it saw is test data, not a secret.
		LastAuthorization: c.lastAuth,
	}
	for op, n := range c.requests {
		st.Requests[op] = n
	}
	cfg := c.config
	c.srv.mu.Unlock()
	st.Config = cfg.document()
	return st
}

// faultJSON is Fault on the wire: camelCase keys and the latency as a Go duration ("250ms").
type faultJSON struct {
	DeployFailed   bool   `json:"deployFailed,omitempty"`
	Unhealthy      bool   `json:"unhealthy,omitempty"`
	HTTPStatus     int    `json:"httpStatus,omitempty"`
	Latency        string `json:"latency,omitempty"`
	ProxyUnhealthy bool   `json:"proxyUnhealthy,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (f Fault) MarshalJSON() ([]byte, error) {
	out := faultJSON{DeployFailed: f.DeployFailed, Unhealthy: f.Unhealthy, HTTPStatus: f.HTTPStatus,
		ProxyUnhealthy: f.ProxyUnhealthy}
	if f.Latency != 0 {
		out.Latency = f.Latency.String()
	}
	return json.Marshal(out)
}

// UnmarshalJSON implements json.Unmarshaler; unknown keys are an error, so that a misspelt
// fault is not silently ignored.
func (f *Fault) UnmarshalJSON(data []byte) error {
	var in faultJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return fmt.Errorf("decode fault: %w", err)
	}
	var latency time.Duration
	if in.Latency != "" {
		var err error
		if latency, err = time.ParseDuration(in.Latency); err != nil {
			return fmt.Errorf("decode fault: latency: %w", err)
		}
	}
	if latency < 0 {
		return fmt.Errorf("decode fault: latency must not be negative, got %s", in.Latency)
	}
	if in.HTTPStatus != 0 && (in.HTTPStatus < 100 || in.HTTPStatus > 599) {
		return fmt.Errorf("decode fault: httpStatus must be an HTTP status code, got %d", in.HTTPStatus)
	}
	*f = Fault{DeployFailed: in.DeployFailed, Unhealthy: in.Unhealthy, HTTPStatus: in.HTTPStatus,
		Latency: latency, ProxyUnhealthy: in.ProxyUnhealthy}
	return nil
}

// serveControl serves the control endpoints under /_control/clusters/:
//
//	GET  <ns>/<name>        the ClusterState
//	PUT  <ns>/<name>/fault  set the Fault (JSON body; {} clears it)
//	POST <ns>/<name>/reset  Cluster.Reset
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request, rest string) {
	parts := strings.Split(strings.TrimSuffix(rest, "/"), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		http.NotFound(w, r)
		return
	}
	c := s.Cluster(parts[0], parts[1])
	action := ""
	if len(parts) == 3 {
		action = parts[2]
	}
	switch {
	case action == "" && r.Method == http.MethodGet:
		writeJSON(w, c.State())
	case action == "fault" && r.Method == http.MethodPut:
		body, err := readBody(r, maxControlBytes)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var f Fault
		if err := json.Unmarshal(body, &f); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.SetFault(f)
		writeJSON(w, c.State())
	case action == "reset" && r.Method == http.MethodPost:
		c.Reset()
		writeJSON(w, c.State())
	case action == "":
		methodNotAllowed(w, "GET")
	case action == "fault":
		methodNotAllowed(w, "PUT")
	case action == "reset":
		methodNotAllowed(w, "POST")
	default:
		http.NotFound(w, r)
	}
}

// serveTotals serves GET /_control/totals: the request counts over all clusters, by operation.
func (s *Server) serveTotals(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		methodNotAllowed(w, "GET")
		return
	}
	s.mu.Lock()
	totals := make(map[string]int, len(s.totals))
	for op, n := range s.totals {
		totals[op] = n
	}
	s.mu.Unlock()
	writeJSON(w, totals)
}

// writeJSON answers 200 with v encoded.
func writeJSON(w http.ResponseWriter, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
