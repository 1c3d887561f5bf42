// Package dashboard is the spoke's client of a Ray cluster's dashboard (the Serve REST API that
// deploys and reports Serve applications) and of the Serve HTTP proxy's health endpoint, plus
// the Resolver that turns a RayCluster's head Service and head Pod into the URLs to call.
//
// It sends the same requests as KubeRay v1.6.2 (paths, query, auth header, 2 s timeout) with
// three differences: the connection pool is sized for hundreds of dashboards, redirects are
// never followed (they would carry the auth token to another host), and response bodies are
// read and quoted in errors only up to a bound, never with the token.
//
// It imports no other RayFleet package, so never hub/; only its tests use the stand-in in
// shared/localfleet/raydashboard.
package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultTimeout bounds each dashboard or proxy request, as KubeRay's clients do: a reconcile
// must not stall on a head Pod that stopped answering.
const DefaultTimeout = 2 * time.Second

// Paths and headers of the Ray endpoints.
const (
	// serveApplicationsPath is where declarative configs are PUT and Serve details read; the
	// dashboard routes only the form with the trailing slash.
	serveApplicationsPath = "/api/serve/applications/"
	// serveDetailsQuery keeps the answer to the applications deployed through PUT.
	serveDetailsQuery = "?api_type=declarative"
	// proxyHealthPath is the Serve proxy's health endpoint, served on the Serve HTTP port.
	proxyHealthPath = "/-/healthz"
	// authHeader carries the cluster's token when Ray token authentication is on.
	authHeader = "x-ray-authorization"
)

// Bounds on what is read from a response.
const (
	// maxResponseBytes caps a Serve details answer; a large multi-app cluster sends a few
	// hundred KiB, so anything past this is not a dashboard answering.
	maxResponseBytes = 16 << 20
	// maxExcerptBytes caps the part of a response body quoted in an error, which ends up in
	// events and status messages.
	maxExcerptBytes = 512
	// maxDrainBytes is how much of an unread body is discarded so that the connection can be
	// reused; a longer body costs a new connection rather than the time to read it.
	maxDrainBytes = 64 << 10
)

// Operation names, the values of the metrics' operation label.
const (
	opUpdateDeployments = "update_deployments"
	opServeDetails      = "serve_details"
	opProxyHealth       = "proxy_health"
)

// Client talks to one Ray cluster's dashboard.
type Client interface {
	// UpdateDeployments PUTs a declarative multi-application Serve config (JSON) to /api/serve/applications/.
	UpdateDeployments(ctx context.Context, configJSON []byte) error
	// ServeDetails GETs /api/serve/applications/?api_type=declarative.
	ServeDetails(ctx context.Context) (*ServeDetails, error)
}

// Factory makes dashboard clients and checks Serve proxies; the reconciler holds one.
type Factory interface {
	// Dashboard returns a client for the dashboard at baseURL; a non-empty authToken is sent as
	// `x-ray-authorization: Bearer <token>`.
	Dashboard(baseURL, authToken string) Client
	// CheckProxyHealth GETs <baseURL>/-/healthz and returns nil only on HTTP 200.
	CheckProxyHealth(ctx context.Context, baseURL string) error
}

// FactoryOptions configures NewFactory.
type FactoryOptions struct {
	// Timeout bounds each request, reading the answer included; 0 means DefaultTimeout.
	Timeout time.Duration
	// Transport sends the requests; nil means a pooled transport shared by every client the
	// factory makes.
	Transport http.RoundTripper
	// Registerer receives the request metrics; nil means no metrics.
	Registerer prometheus.Registerer
}

// StatusError is the error of a request that got an unexpected HTTP status. Callers can tell
// a dashboard that answered (this error) from one that could not be reached (any other error).
type StatusError struct {
	// Method and URL name the request; the URL never holds credentials.
	Method, URL string
	// StatusCode is the HTTP status code received.
	StatusCode int
	// Status is the status line received, such as "500 Internal Server Error".
	Status string
	// Body is the start of the response body, at most maxExcerptBytes, with the auth token
	// redacted should the server have echoed it.
	Body string
}

// Error implements error.
func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %s", e.Method, e.URL, e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// NewFactory returns a Factory whose clients share one HTTP client and one set of metrics.
func NewFactory(opts FactoryOptions) (Factory, error) {
	if opts.Timeout < 0 {
		return nil, fmt.Errorf("dashboard client timeout must not be negative, got %s", opts.Timeout)
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Transport == nil {
		opts.Transport = newTransport()
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &factory{
		http: &http.Client{
			Transport: opts.Transport,
			// A redirect would resend the custom auth header to wherever it points (Go strips
			// only the standard credential headers); the dashboard never redirects these paths,
			// so a 3xx is reported as the error it is.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		timeout: opts.Timeout,
		metrics: m,
	}, nil
}

// newTransport is http.DefaultTransport's configuration with a pool sized for a spoke that
// polls a few hundred dashboards every couple of seconds: keeping their connections avoids a
// TCP handshake per call, while a couple of idle connections per host are enough because a
// reconciler talks to one cluster at a time.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 2
	t.IdleConnTimeout = 90 * time.Second
	t.DialContext = (&net.Dialer{Timeout: DefaultTimeout, KeepAlive: 30 * time.Second}).DialContext
	return t
}

// factory implements Factory.
type factory struct {
	http    *http.Client
	timeout time.Duration
	metrics *metrics
}

// Dashboard implements Factory.
func (f *factory) Dashboard(baseURL, authToken string) Client {
	return &client{factory: f, baseURL: strings.TrimRight(baseURL, "/"), token: authToken}
}

// CheckProxyHealth implements Factory. Only 200 counts as healthy, as for KubeRay: the proxy
// answers 503 while its node drains.
func (f *factory) CheckProxyHealth(ctx context.Context, baseURL string) error {
	_, err := f.roundTrip(ctx, request{
		op:     opProxyHealth,
		method: http.MethodGet,
		url:    strings.TrimRight(baseURL, "/") + proxyHealthPath,
		ok:     func(code int) bool { return code == http.StatusOK },
	})
	if err != nil {
		return fmt.Errorf("check Serve proxy health: %w", err)
	}
	return nil
}

// client implements Client for one dashboard.
type client struct {
	factory *factory
	baseURL string
	token   string
}

// UpdateDeployments implements Client.
func (c *client) UpdateDeployments(ctx context.Context, configJSON []byte) error {
	_, err := c.factory.roundTrip(ctx, request{
		op:          opUpdateDeployments,
		method:      http.MethodPut,
		url:         c.baseURL + serveApplicationsPath,
		body:        configJSON,
		contentType: "application/json",
		token:       c.token,
	})
	if err != nil {
		return fmt.Errorf("update Serve applications: %w", err)
	}
	return nil
}

// ServeDetails implements Client.
func (c *client) ServeDetails(ctx context.Context) (*ServeDetails, error) {
	url := c.baseURL + serveApplicationsPath + serveDetailsQuery
	body, err := c.factory.roundTrip(ctx, request{
		op:       opServeDetails,
		method:   http.MethodGet,
		url:      url,
		token:    c.token,
		wantBody: true,
	})
	if err != nil {
		return nil, fmt.Errorf("get Serve details: %w", err)
	}
	var details ServeDetails
	if err := json.Unmarshal(body, &details); err != nil {
		return nil, fmt.Errorf("get Serve details: decode the answer of GET %s: %w; received %q",
			url, err, excerpt(body, c.token))
	}
	if details.Applications == nil {
		details.Applications = map[string]ApplicationDetails{}
	}
	return &details, nil
}

// request is one call to a dashboard or a proxy.
type request struct {
	op          string
	method      string
	url         string
	body        []byte
	contentType string
	// token is sent in the auth header when non-empty, and redacted from error excerpts.
	token string
	// ok tells the expected status codes; nil means any 2xx.
	ok func(code int) bool
	// wantBody asks for the body of a successful answer; otherwise it is discarded.
	wantBody bool
}

// roundTrip sends req, records its metrics and returns the body of a successful answer when
// req.wantBody is set.
func (f *factory) roundTrip(ctx context.Context, req request) ([]byte, error) {
	start := time.Now()
	body, err := f.send(ctx, req)
	f.metrics.observe(req.op, time.Since(start), err)
	return body, err
}

// send does the work of roundTrip under the factory's timeout.
func (f *factory) send(ctx context.Context, req request) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()

	var reqBody io.Reader
	if req.body != nil {
		reqBody = bytes.NewReader(req.body)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.method, req.url, reqBody)
	if err != nil {
		return nil, fmt.Errorf("build %s request: %w", req.method, err)
	}
	if req.contentType != "" {
		httpReq.Header.Set("Content-Type", req.contentType)
	}
	if req.token != "" {
		httpReq.Header.Set(authHeader, "Bearer "+req.token)
	}

	resp, err := f.http.Do(httpReq)
	if err != nil {
		// *url.Error names the method and URL; the header, and so the token, is never part of it.
		return nil, err
	}
	defer drainAndClose(resp.Body)

	ok := req.ok
	if ok == nil {
		ok = func(code int) bool { return code >= 200 && code <= 299 }
	}
	if !ok(resp.StatusCode) {
		// Read past the excerpt by a token's length, so that an echoed token straddling the
		// cut is still whole when it is redacted.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, int64(maxExcerptBytes+len(req.token)+1)))
		return nil, &StatusError{
			Method: req.method, URL: req.url,
			StatusCode: resp.StatusCode, Status: resp.Status,
			Body: excerpt(head, req.token),
		}
	}
	if !req.wantBody {
		return nil, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the answer of %s %s: %w", req.method, req.url, err)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("the answer of %s %s is larger than %d bytes", req.method, req.url, maxResponseBytes)
	}
	return body, nil
}

// drainAndClose discards what is left of a body, up to maxDrainBytes, so that the transport can
// reuse the connection, and closes it.
func drainAndClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, maxDrainBytes))
	_ = body.Close()
}

// excerpt returns the start of body for an error message: at most maxExcerptBytes of it, with
// every occurrence of token replaced should the server have echoed it, valid UTF-8 and
// surrounding space trimmed. An occurrence that starts within the excerpt is redacted whole
// even when it runs past the excerpt's end.
func excerpt(body []byte, token string) string {
	s := string(body)
	var b strings.Builder
	i := 0
	for i < len(s) && i < maxExcerptBytes {
		if token != "" && strings.HasPrefix(s[i:], token) {
			b.WriteString("[redacted]")
			i += len(token)
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	out := strings.TrimSpace(strings.ToValidUTF8(b.String(), "\uFFFD"))
	if i < len(s) {
		out += " …(truncated)"
	}
	return out
}
