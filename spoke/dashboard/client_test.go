package dashboard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

const testToken = "s3cr3t-t0ken-0123456789abcdef"

// recorded is what a test server saw of one request.
type recorded struct {
	method, path, query, contentType, auth, body string
}

// newServer answers every request with status and body, recording the last request.
func newServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Pointer[recorded]) {
	t.Helper()
	var last atomic.Pointer[recorded]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last.Store(&recorded{
			method: r.Method, path: r.URL.Path, query: r.URL.RawQuery,
			contentType: r.Header.Get("Content-Type"), auth: r.Header.Get("x-ray-authorization"), body: string(b),
		})
		if status >= 300 && status < 400 {
			w.Header().Set("Location", "http://elsewhere.example/")
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

func newTestFactory(t *testing.T, opts FactoryOptions) Factory {
	t.Helper()
	f, err := NewFactory(opts)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestUpdateDeployments(t *testing.T) {
	config := `{"applications":[{"name":"app","import_path":"m:app"}]}`
	tests := []struct {
		name     string
		status   int
		body     string
		token    string
		wantAuth string
		wantErr  []string // substrings of the error; nil: no error
		wantCode int      // StatusError.StatusCode when an error is expected
		trailing bool     // base URL given with a trailing slash
	}{
		{name: "200 without auth", status: 200},
		{name: "200 with auth", status: 200, token: testToken, wantAuth: "Bearer " + testToken},
		{name: "trailing slash in base URL", status: 200, trailing: true},
		{name: "204 is a success", status: 204},
		{name: "400 carries Ray's message", status: 400, body: "Invalid config: applications: field required",
			wantErr: []string{"update Serve applications", "PUT", "HTTP 400 Bad Request", "applications: field required"}, wantCode: 400},
		{name: "500", status: 500, body: "internal", wantErr: []string{"HTTP 500 Internal Server Error: internal"}, wantCode: 500},
		{name: "redirect not followed", status: 307, token: testToken, wantAuth: "Bearer " + testToken,
			wantErr: []string{"HTTP 307"}, wantCode: 307},
		{name: "echoed token redacted", status: 401, token: testToken, wantAuth: "Bearer " + testToken,
			body: "bad token " + testToken, wantErr: []string{"HTTP 401", "bad token [redacted]"}, wantCode: 401},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := newServer(t, tc.status, tc.body)
			base := srv.URL
			if tc.trailing {
				base += "/"
			}
			err := newTestFactory(t, FactoryOptions{}).Dashboard(base, tc.token).UpdateDeployments(context.Background(), []byte(config))
			checkErr(t, err, tc.wantErr, tc.wantCode)
			want := recorded{method: "PUT", path: "/api/serve/applications/", contentType: "application/json", auth: tc.wantAuth, body: config}
			if diff := cmp.Diff(want, *last.Load(), cmp.AllowUnexported(recorded{})); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServeDetails(t *testing.T) {
	// Abridged from Ray's REST API documentation; the fields the client ignores are kept to show
	// that they do not disturb decoding.
	rayAnswer := `{
	  "controller_info": {"node_id": "n1", "actor_name": "SERVE_CONTROLLER_ACTOR"},
	  "proxy_location": "EveryNode",
	  "http_options": {"host": "0.0.0.0", "port": 8000},
	  "proxies": {"n1": {"status": "HEALTHY"}},
	  "deploy_mode": "MULTI_APP",
	  "target_capacity": 50.0,
	  "applications": {
	    "app1": {
	      "name": "app1", "route_prefix": "/", "docs_path": null, "status": "RUNNING", "message": "",
	      "last_deployed_time_s": 1694042836.19,
	      "deployed_app_config": {"name": "app1", "import_path": "src.text-test:app"},
	      "deployments": {
	        "Translator": {"name": "Translator", "status": "HEALTHY", "message": "", "target_num_replicas": 2,
	          "replicas": [
	            {"node_id": "n1", "actor_name": "SERVE_REPLICA::app1#Translator#a1b2c3", "replica_id": "a1b2c3",
	             "state": "RUNNING", "pid": 1234, "start_time_s": 1694042840.5},
	            {"replica_id": "d4e5f6", "state": "STARTING", "start_time_s": 1694042841.0}]},
	        "Summarizer": {"name": "Summarizer", "status": "UPDATING", "message": "starting", "target_num_replicas": 1,
	          "replicas": []}
	      }
	    }
	  }
	}`
	tests := []struct {
		name     string
		status   int
		body     string
		token    string
		want     *ServeDetails
		wantErr  []string
		wantCode int
	}{
		{name: "Ray's answer", status: 200, body: rayAnswer, token: testToken, want: &ServeDetails{
			DeployMode: DeployModeMultiApp, TargetCapacity: ptr.To(50.0),
			Applications: map[string]ApplicationDetails{"app1": {
				Name: "app1", Status: AppStatusRunning, RoutePrefix: "/",
				Deployments: map[string]DeploymentDetails{
					"Translator": {Name: "Translator", Status: DeploymentStatusHealthy, TargetNumReplicas: 2,
						Replicas: []ReplicaDetails{
							{ReplicaID: "a1b2c3", State: ReplicaStateRunning},
							{ReplicaID: "d4e5f6", State: ReplicaStateStarting},
						}},
					"Summarizer": {Name: "Summarizer", Status: DeploymentStatusUpdating, Message: "starting",
						TargetNumReplicas: 1, Replicas: []ReplicaDetails{}},
				},
			}},
		}},
		{name: "Serve not started", status: 200, body: `{"deploy_mode":"MULTI_APP","applications":{}}`,
			want: &ServeDetails{DeployMode: DeployModeMultiApp, Applications: map[string]ApplicationDetails{}}},
		{name: "null applications read as empty", status: 200, body: `{"applications":null}`,
			want: &ServeDetails{Applications: map[string]ApplicationDetails{}}},
		{name: "malformed JSON quotes what was received", status: 200, body: `<html>proxy error</html>`,
			wantErr: []string{"get Serve details", "decode", `received "<html>proxy error</html>"`}},
		{name: "wrong JSON type", status: 200, body: `{"applications":[]}`,
			wantErr: []string{"decode", `received "{\"applications\":[]}"`}},
		{name: "long malformed answer is cut", status: 200, body: "x" + strings.Repeat("y", 4000),
			wantErr: []string{"…(truncated)"}},
		{name: "404", status: 404, body: "Not Found", wantErr: []string{"GET", "HTTP 404 Not Found: Not Found"}, wantCode: 404},
		{name: "503", status: 503, body: "", wantErr: []string{"HTTP 503 Service Unavailable"}, wantCode: 503},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := newServer(t, tc.status, tc.body)
			got, err := newTestFactory(t, FactoryOptions{}).Dashboard(srv.URL, tc.token).ServeDetails(context.Background())
			checkErr(t, err, tc.wantErr, tc.wantCode)
			if err != nil && len(err.Error()) > 2*maxExcerptBytes+200 {
				t.Errorf("error of %d bytes is not bounded: %.100s...", len(err.Error()), err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ServeDetails (-want +got):\n%s", diff)
			}
			req := last.Load()
			wantAuth := ""
			if tc.token != "" {
				wantAuth = "Bearer " + tc.token
			}
			if req.method != "GET" || req.path != "/api/serve/applications/" || req.query != "api_type=declarative" || req.auth != wantAuth {
				t.Errorf("request = %+v, want GET /api/serve/applications/?api_type=declarative with auth %q", req, wantAuth)
			}
		})
	}
}

func TestCheckProxyHealth(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		body     string
		wantErr  []string
		wantCode int
	}{
		{name: "200 healthy", status: 200, body: "success"},
		{name: "only 200 counts", status: 204, wantErr: []string{"check Serve proxy health", "HTTP 204"}, wantCode: 204},
		{name: "draining", status: 503, body: "This node is being drained.",
			wantErr: []string{"HTTP 503 Service Unavailable: This node is being drained."}, wantCode: 503},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, last := newServer(t, tc.status, tc.body)
			err := newTestFactory(t, FactoryOptions{}).CheckProxyHealth(context.Background(), srv.URL+"/")
			checkErr(t, err, tc.wantErr, tc.wantCode)
			if req := last.Load(); req.method != "GET" || req.path != "/-/healthz" || req.auth != "" {
				t.Errorf("request = %+v, want GET /-/healthz without auth", req)
			}
		})
	}
}

// TestTimeout: a dashboard that never answers costs the configured timeout, not more, and the
// error says it was a deadline. The handler blocks until the request's context ends.
func TestTimeout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// The server notices a client hanging up only once the body was read.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	f := newTestFactory(t, FactoryOptions{Timeout: 50 * time.Millisecond})
	calls := map[string]func() error{
		"UpdateDeployments": func() error {
			return f.Dashboard(srv.URL, "").UpdateDeployments(context.Background(), []byte(`{}`))
		},
		"ServeDetails": func() error {
			_, err := f.Dashboard(srv.URL, "").ServeDetails(context.Background())
			return err
		},
		"CheckProxyHealth": func() error { return f.CheckProxyHealth(context.Background(), srv.URL) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			err := call()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want a deadline exceeded", err)
			}
			if elapsed := time.Since(start); elapsed > 5*time.Second {
				t.Errorf("took %s with a 50ms timeout", elapsed)
			}
		})
	}
}

// TestCallerCancellation: the caller's context ends a request too.
func TestCallerCancellation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// The server notices a client hanging up only once the body was read.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := newTestFactory(t, FactoryOptions{}).Dashboard(srv.URL, "").ServeDetails(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestUnreachable: a connection error is not a StatusError and names the URL, never the token.
func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there any more
	err = newTestFactory(t, FactoryOptions{}).Dashboard("http://"+addr, testToken).UpdateDeployments(context.Background(), []byte(`{}`))
	if err == nil {
		t.Fatal("no error from a closed port")
	}
	if _, ok := errors.AsType[*StatusError](err); ok {
		t.Errorf("err = %v is a StatusError", err)
	}
	if !strings.Contains(err.Error(), addr) || strings.Contains(err.Error(), testToken) {
		t.Errorf("err = %q, want the address and not the token", err)
	}
}

// TestBadBaseURL: a URL that cannot be parsed is an error, not a panic.
func TestBadBaseURL(t *testing.T) {
	f := newTestFactory(t, FactoryOptions{})
	if _, err := f.Dashboard("http://[::1", "").ServeDetails(context.Background()); err == nil {
		t.Error("ServeDetails with a bad URL: no error")
	}
	if err := f.CheckProxyHealth(context.Background(), "::"); err == nil {
		t.Error("CheckProxyHealth with a bad URL: no error")
	}
}

// TestOversizedAnswer: an answer past maxResponseBytes is refused rather than decoded.
func TestOversizedAnswer(t *testing.T) {
	big := `{"applications":{},"pad":"` + strings.Repeat("x", maxResponseBytes) + `"}`
	srv, _ := newServer(t, 200, big)
	// Reading the answer counts against the request timeout; on a loaded machine, with -race,
	// the default ran out before the size did (seen in CI).
	_, err := newTestFactory(t, FactoryOptions{Timeout: time.Minute}).Dashboard(srv.URL, "").ServeDetails(context.Background())
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v, want a size error", err)
	}
}

// TestConnectionsReused: error answers with bodies are drained, so one connection serves every
// request in sequence.
func TestConnectionsReused(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/-/healthz" {
			http.Error(w, strings.Repeat("draining ", 1000), http.StatusServiceUnavailable)
			return
		}
		http.Error(w, strings.Repeat("boom ", 1000), http.StatusInternalServerError)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f := newTestFactory(t, FactoryOptions{})
	c := f.Dashboard(srv.URL, "")
	for range 5 {
		if err := c.UpdateDeployments(context.Background(), []byte(`{}`)); err == nil {
			t.Fatal("no error from a 500")
		}
		if _, err := c.ServeDetails(context.Background()); err == nil {
			t.Fatal("no error from a 500")
		}
		if err := f.CheckProxyHealth(context.Background(), srv.URL); err == nil {
			t.Fatal("no error from a 503")
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 15 sequential requests, want 1", n)
	}
}

func TestNewFactoryRejectsNegativeTimeout(t *testing.T) {
	if _, err := NewFactory(FactoryOptions{Timeout: -time.Second}); err == nil {
		t.Error("no error for a negative timeout")
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("a", maxExcerptBytes+100)
	tests := []struct {
		name, body, token, want string
	}{
		{name: "short", body: "  oops \n", want: "oops"},
		{name: "empty", body: "", want: ""},
		{name: "cut", body: long, want: long[:maxExcerptBytes] + " …(truncated)"},
		{name: "exactly the limit", body: long[:maxExcerptBytes], want: long[:maxExcerptBytes]},
		{name: "token redacted", body: "got tok and tok", token: "tok", want: "got [redacted] and [redacted]"},
		{name: "token straddling the cut redacted whole", body: long[:maxExcerptBytes-2] + "secret" + "tail",
			token: "secret", want: long[:maxExcerptBytes-2] + "[redacted] …(truncated)"},
		{name: "invalid UTF-8 replaced", body: "bad \xff byte", want: "bad \uFFFD byte"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := excerpt([]byte(tc.body), tc.token); got != tc.want {
				t.Errorf("excerpt = %q, want %q", got, tc.want)
			}
		})
	}
}

// checkErr checks err against the wanted substrings (nil: no error) and, when wantCode is set,
// the StatusError's code. No error ever contains the test token.
func checkErr(t *testing.T, err error, want []string, wantCode int) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	for _, s := range want {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("error %q contains the auth token", err)
	}
	if wantCode != 0 {
		se, ok := errors.AsType[*StatusError](err)
		if !ok || se.StatusCode != wantCode {
			t.Errorf("error %v: want a StatusError with code %d", err, wantCode)
		}
	}
}
