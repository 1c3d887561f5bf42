// Package raydashboard is a stand-in for the parts of Ray that a RayService reconciler talks
// to: the dashboard's Serve REST API (PUT and GET /api/serve/applications/) and the Serve
// proxy's health endpoint (/-/healthz). It is for tests, e2e and the local fleet of `rayfleet
// dev`; hub/ and spoke/ production code never imports it, and it imports no other RayFleet
// package.
//
// One Server hosts many Ray clusters, each under its own path prefix, so that the spoke's
// dashboard.TemplateResolver reaches them over loopback:
//
//	dashboard of cluster ns/name: <server>/clusters/<ns>/<name>        (DashboardTemplate)
//	Serve proxy of its head Pod:  <server>/clusters/<ns>/<name>/proxy  (ProxyTemplate)
//
// A submitted config's applications go NOT_STARTED → DEPLOYING → RUNNING over
// Options.DeployDelay, computed from the clock whenever the status is read (no goroutines);
// each deployment lists its num_replicas replicas, STARTING until it is HEALTHY and RUNNING
// from then on (target_capacity is echoed but scales nothing here, unlike Ray);
// faults make them fail or make the server slow or answer errors. Tests in the same process
// drive a cluster through Cluster; other processes use the control endpoints (see
// ControlClient).
package raydashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Operation names, for Cluster.Requests and Server.TotalRequests.
const (
	// OpUpdateDeployments is PUT /api/serve/applications/.
	OpUpdateDeployments = "update_deployments"
	// OpServeDetails is GET /api/serve/applications/.
	OpServeDetails = "serve_details"
	// OpDeleteApplications is DELETE /api/serve/applications/, which shuts Serve down.
	OpDeleteApplications = "delete_applications"
	// OpProxyHealth is GET /-/healthz on the Serve proxy.
	OpProxyHealth = "proxy_health"
)

// URL layout.
const (
	clustersPrefix        = "/clusters/"
	controlPrefix         = "/_control/clusters/"
	controlTotalsPath     = "/_control/totals"
	serveApplicationsPath = "/api/serve/applications/"
	proxyHealthPath       = "/proxy/-/healthz"
	// authHeader carries Ray's auth token to the dashboard: "Bearer <token>".
	authHeader = "x-ray-authorization"
)

// maxConfigBytes bounds a PUT body; far above any real Serve config.
const maxConfigBytes = 32 << 20

// DashboardTemplate is the spoke's dashboard URL template for a stand-in at serverURL.
func DashboardTemplate(serverURL string) string {
	return strings.TrimRight(serverURL, "/") + "/clusters/{namespace}/{cluster}"
}

// ProxyTemplate is the spoke's Serve proxy URL template for a stand-in at serverURL.
func ProxyTemplate(serverURL string) string {
	return strings.TrimRight(serverURL, "/") + "/clusters/{namespace}/{cluster}/proxy"
}

// Options configures a Server.
type Options struct {
	// DeployDelay is the time from a config submission until its applications are RUNNING;
	// they are NOT_STARTED for the first tenth of it, then DEPLOYING. 0 means RUNNING at once.
	DeployDelay time.Duration
	// Clock drives the transitions and the injected latency; nil means the real clock.
	Clock clock.Clock
}

// Server is the stand-in: an http.Handler for any number of Ray clusters.
type Server struct {
	clock       clock.Clock
	deployDelay time.Duration

	mu       sync.Mutex
	clusters map[string]*Cluster
	totals   map[string]int
	httpSrv  *http.Server
	closed   bool
}

// New returns a Server with no clusters.
func New(opts Options) *Server {
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Server{
		clock:       clk,
		deployDelay: opts.DeployDelay,
		clusters:    map[string]*Cluster{},
		totals:      map[string]int{},
	}
}

// Start listens on 127.0.0.1:0 (or addr) and serves until Close; returns the base URL.
func (s *Server) Start(addr string) (string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpSrv != nil || s.closed {
		return "", errors.New("ray dashboard stand-in already started or closed")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("ray dashboard stand-in: listen on %s: %w", addr, err)
	}
	s.httpSrv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func(srv *http.Server) { _ = srv.Serve(ln) }(s.httpSrv)
	return "http://" + ln.Addr().String(), nil
}

// Close stops serving and closes open connections; requests waiting on an injected latency
// end with their connection. It does nothing when the Server was not started or is closed.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, already := s.httpSrv, s.closed
	s.closed = srv != nil
	s.mu.Unlock()
	if srv == nil || already {
		return nil
	}
	if err := srv.Close(); err != nil {
		return fmt.Errorf("close ray dashboard stand-in: %w", err)
	}
	return nil
}

// Cluster returns the Ray cluster namespace/name, created on first use (a request for it
// creates it too).
func (s *Server) Cluster(namespace, name string) *Cluster {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clusterLocked(namespace, name)
}

// clusterLocked is Cluster with s.mu held.
func (s *Server) clusterLocked(namespace, name string) *Cluster {
	key := namespace + "/" + name
	c, ok := s.clusters[key]
	if !ok {
		c = &Cluster{srv: s, namespace: namespace, name: name, requests: map[string]int{}}
		s.clusters[key] = c
	}
	return c
}

// TotalRequests is the number of requests for op over all clusters.
func (s *Server) TotalRequests(op string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals[op]
}

// ServeHTTP routes the dashboard, proxy and control paths.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case path == controlTotalsPath:
		s.serveTotals(w, r)
	case strings.HasPrefix(path, controlPrefix):
		s.serveControl(w, r, strings.TrimPrefix(path, controlPrefix))
	case strings.HasPrefix(path, clustersPrefix):
		s.serveCluster(w, r, strings.TrimPrefix(path, clustersPrefix))
	default:
		http.NotFound(w, r)
	}
}

// serveCluster serves "<ns>/<name>/<endpoint>".
func (s *Server) serveCluster(w http.ResponseWriter, r *http.Request, rest string) {
	namespace, name, endpoint, ok := splitClusterPath(rest)
	if !ok {
		http.NotFound(w, r)
		return
	}
	var op string
	switch {
	case endpoint == serveApplicationsPath && r.Method == http.MethodGet:
		op = OpServeDetails
	case endpoint == serveApplicationsPath && r.Method == http.MethodPut:
		op = OpUpdateDeployments
	case endpoint == serveApplicationsPath && r.Method == http.MethodDelete:
		op = OpDeleteApplications
	case endpoint == proxyHealthPath && r.Method == http.MethodGet:
		op = OpProxyHealth
	case endpoint == serveApplicationsPath:
		methodNotAllowed(w, "GET, PUT, DELETE")
		return
	case endpoint == proxyHealthPath:
		methodNotAllowed(w, "GET")
		return
	default:
		http.NotFound(w, r)
		return
	}

	c, fault := s.countRequest(namespace, name, op, r.Header.Get(authHeader))
	var body []byte
	if op == OpUpdateDeployments {
		// Read before waiting: the server notices a client that gave up only once the body is read.
		var err error
		if body, err = readBody(r, maxConfigBytes); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	if !s.wait(r.Context(), fault.Latency) {
		return // the client gave up; nobody reads an answer
	}
	if op != OpProxyHealth && fault.HTTPStatus != 0 {
		http.Error(w, fmt.Sprintf("injected fault: HTTP %d from the Ray dashboard stand-in", fault.HTTPStatus), fault.HTTPStatus)
		return
	}
	switch op {
	case OpServeDetails:
		c.serveDetails(w, r)
	case OpUpdateDeployments:
		c.updateDeployments(w, body)
	case OpDeleteApplications:
		c.Reset()
		w.WriteHeader(http.StatusOK)
	case OpProxyHealth:
		c.proxyHealth(w)
	}
}

// countRequest records a request for op on cluster namespace/name with auth as its
// authorization header, before any fault applies, and returns the cluster with its current
// fault.
func (s *Server) countRequest(namespace, name, op, auth string) (*Cluster, Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clusterLocked(namespace, name)
	c.requests[op]++
	if op != OpProxyHealth {
		c.lastAuth = auth
	}
	s.totals[op]++
	return c, c.fault
}

// wait blocks for d on the server's clock, or until ctx ends; it reports whether d elapsed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-s.clock.After(d):
		return true
	case <-ctx.Done():
		return false
	}
}

// splitClusterPath splits "<ns>/<name>/<rest>" into its parts; endpoint keeps its leading slash.
func splitClusterPath(path string) (namespace, name, endpoint string, ok bool) {
	parts := strings.SplitN(path, "/", 3)
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], "/" + parts[2], true
}

// methodNotAllowed answers 405 with the allowed methods.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}

// readBody reads a request body of at most limit bytes.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read the request body: %w", err)
	}
	if int64(len(body)) > limit {
		return nil, fmt.Errorf("the request body is larger than %d bytes", limit)
	}
	return body, nil
}
