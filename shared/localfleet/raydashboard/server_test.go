package raydashboard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

func TestRouting(t *testing.T) {
	tests := []struct {
		name, method, path, body string
		wantCode                 int
		wantAllow                string
		wantBody                 string
	}{
		{name: "GET details", method: "GET", path: "/clusters/ns/rc/api/serve/applications/?api_type=declarative", wantCode: 200},
		{name: "PUT config", method: "PUT", path: "/clusters/ns/rc/api/serve/applications/", body: oneApp, wantCode: 200},
		{name: "DELETE shuts Serve down", method: "DELETE", path: "/clusters/ns/rc/api/serve/applications/", wantCode: 200},
		{name: "proxy health", method: "GET", path: "/clusters/ns/rc/proxy/-/healthz", wantCode: 503},
		{name: "invalid config", method: "PUT", path: "/clusters/ns/rc/api/serve/applications/", body: `{}`,
			wantCode: 400, wantBody: "invalid Serve config: applications: field required"},
		{name: "bad api_type", method: "GET", path: "/clusters/ns/rc/api/serve/applications/?api_type=all",
			wantCode: 400, wantBody: "Invalid 'api_type'"},
		{name: "no trailing slash, as in Ray", method: "GET", path: "/clusters/ns/rc/api/serve/applications", wantCode: 404},
		{name: "POST applications", method: "POST", path: "/clusters/ns/rc/api/serve/applications/", wantCode: 405, wantAllow: "GET, PUT, DELETE"},
		{name: "PUT healthz", method: "PUT", path: "/clusters/ns/rc/proxy/-/healthz", wantCode: 405, wantAllow: "GET"},
		{name: "other dashboard path", method: "GET", path: "/clusters/ns/rc/api/jobs/", wantCode: 404},
		{name: "cluster without endpoint", method: "GET", path: "/clusters/ns/rc", wantCode: 404},
		{name: "empty namespace", method: "GET", path: "/clusters//rc/api/serve/applications/", wantCode: 404},
		{name: "outside the layout", method: "GET", path: "/api/serve/applications/", wantCode: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newEnv(t, 0).do(tc.method, tc.path, tc.body)
			if rec.Code != tc.wantCode {
				t.Errorf("%s %s = %d %q, want %d", tc.method, tc.path, rec.Code, rec.Body, tc.wantCode)
			}
			if got := rec.Header().Get("Allow"); got != tc.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tc.wantAllow)
			}
			if !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Errorf("body %q does not contain %q", rec.Body, tc.wantBody)
			}
		})
	}
}

// TestDeleteApplications: DELETE shuts Serve down, like a reset.
func TestDeleteApplications(t *testing.T) {
	e := newEnv(t, 0)
	e.put(oneApp)
	e.do(http.MethodDelete, "/clusters/ns/rc/api/serve/applications/", "")
	c := e.s.Cluster("ns", "rc")
	if len(e.details().Applications) != 0 || c.Config() != nil || c.Requests(OpDeleteApplications) != 1 {
		t.Errorf("after DELETE: config %v, %d DELETEs", c.Config(), c.Requests(OpDeleteApplications))
	}
}

// TestCounters: requests count per cluster and in total, clusters are created by requests,
// and the last authorization header is kept per cluster.
func TestCounters(t *testing.T) {
	e := newEnv(t, 0)
	req := func(path, auth string) {
		r, _ := http.NewRequest(http.MethodGet, path, nil)
		if auth != "" {
			r.Header.Set("x-ray-authorization", auth)
		}
		e.s.ServeHTTP(discard{}, r)
	}
	req("/clusters/ns/a/api/serve/applications/", "Bearer tok-a")
	req("/clusters/ns/a/api/serve/applications/", "Bearer tok-a2")
	req("/clusters/ns/a/proxy/-/healthz", "")
	req("/clusters/other/b/api/serve/applications/", "")
	req("/clusters/other/b/api/serve/applications/?api_type=bogus", "") // rejected, still counted

	a, b := e.s.Cluster("ns", "a"), e.s.Cluster("other", "b")
	checks := []struct {
		name      string
		got, want int
	}{
		{"a serve_details", a.Requests(OpServeDetails), 2},
		{"a proxy_health", a.Requests(OpProxyHealth), 1},
		{"b serve_details", b.Requests(OpServeDetails), 2},
		{"b proxy_health", b.Requests(OpProxyHealth), 0},
		{"total serve_details", e.s.TotalRequests(OpServeDetails), 4},
		{"total proxy_health", e.s.TotalRequests(OpProxyHealth), 1},
		{"total update_deployments", e.s.TotalRequests(OpUpdateDeployments), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if got := a.LastAuthorization(); got != "Bearer tok-a2" {
		t.Errorf("a.LastAuthorization = %q, want the last dashboard call's (the proxy call has none)", got)
	}
	if got := b.LastAuthorization(); got != "" {
		t.Errorf("b.LastAuthorization = %q, want empty", got)
	}
}

// TestLatency: an injected latency holds every call until the clock passes it, and a client
// that gives up releases the handler.
func TestLatency(t *testing.T) {
	g := gomega.NewWithT(t)
	e := newEnv(t, 0)
	url, err := e.s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.s.Close() })
	c := e.s.Cluster("ns", "rc")
	c.SetFault(Fault{Latency: 3 * time.Second})

	for _, tc := range []struct{ method, path, body string }{
		{"PUT", "/clusters/ns/rc/api/serve/applications/", oneApp},
		{"GET", "/clusters/ns/rc/api/serve/applications/", ""},
		{"GET", "/clusters/ns/rc/proxy/-/healthz", ""},
	} {
		done := make(chan int, 1)
		go func() {
			req, _ := http.NewRequest(tc.method, url+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- -1
				return
			}
			_ = resp.Body.Close()
			done <- resp.StatusCode
		}()
		g.Eventually(e.clk.HasWaiters).Should(gomega.BeTrue(), "%s %s waits on the clock", tc.method, tc.path)
		g.Consistently(done, 50*time.Millisecond).ShouldNot(gomega.Receive(), "%s %s answered before the latency", tc.method, tc.path)
		e.clk.Step(3 * time.Second)
		g.Eventually(done).Should(gomega.Receive(gomega.Equal(http.StatusOK)), "%s %s", tc.method, tc.path)
	}
	if c.Submissions() != 1 {
		t.Errorf("Submissions = %d, want the delayed PUT accepted", c.Submissions())
	}

	// A client that gives up: its handler returns without the clock moving, so Close (which
	// waits for handlers) does not hang.
	for _, tc := range []struct{ method, path, body string }{
		{"PUT", "/clusters/ns/rc/api/serve/applications/", oneApp},
		{"GET", "/clusters/ns/rc/api/serve/applications/", ""},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, tc.method, url+tc.path, strings.NewReader(tc.body))
		_, err := http.DefaultClient.Do(req)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s %s: err = %v, want a deadline", tc.method, tc.path, err)
		}
	}
	if c.Submissions() != 1 || c.Requests(OpUpdateDeployments) != 2 {
		t.Errorf("after abandoned calls: %d submissions, %d PUTs; want 1 and 2", c.Submissions(), c.Requests(OpUpdateDeployments))
	}
	g.Expect(e.s.Close()).To(gomega.Succeed())
}

// TestConcurrentUse exercises every entry point at once, for the race detector.
func TestConcurrentUse(t *testing.T) {
	e := newEnv(t, time.Second)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("rc%d", i%2)
			for j := range 20 {
				e.do(http.MethodPut, "/clusters/ns/"+name+"/api/serve/applications/",
					fmt.Sprintf(`{"target_capacity":%d,"applications":[{"name":"app","import_path":"m:app"}]}`, j))
				e.do(http.MethodGet, "/clusters/ns/"+name+"/api/serve/applications/", "")
				e.do(http.MethodGet, "/clusters/ns/"+name+"/proxy/-/healthz", "")
				c := e.s.Cluster("ns", name)
				c.SetFault(Fault{Unhealthy: j%2 == 0})
				_ = c.State()
				_ = c.Config()
				_ = e.s.TotalRequests(OpServeDetails)
				if j%5 == 0 {
					c.Reset()
				}
				e.clk.Step(100 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	if got := e.s.TotalRequests(OpUpdateDeployments); got != 160 {
		t.Errorf("TotalRequests(update_deployments) = %d, want 160", got)
	}
}

func TestStartClose(t *testing.T) {
	s := New(Options{})
	if err := s.Close(); err != nil {
		t.Errorf("Close before Start: %v", err)
	}
	url, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Errorf("URL = %q, want loopback", url)
	}
	if _, err = s.Start(""); err == nil {
		t.Error("second Start: no error")
	}
	resp, err := http.Get(url + "/clusters/ns/rc/api/serve/applications/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"deploy_mode":"MULTI_APP"`) {
		t.Errorf("GET over the network = %d %s", resp.StatusCode, body)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(url + "/clusters/ns/rc/api/serve/applications/"); err == nil {
		t.Error("the server still answers after Close")
	}
	if _, err := New(Options{}).Start("256.0.0.1:0"); err == nil {
		t.Error("Start on a bad address: no error")
	}
}

func TestTemplates(t *testing.T) {
	for _, base := range []string{"http://127.0.0.1:1234", "http://127.0.0.1:1234/"} {
		if got, want := DashboardTemplate(base), "http://127.0.0.1:1234/clusters/{namespace}/{cluster}"; got != want {
			t.Errorf("DashboardTemplate(%q) = %q, want %q", base, got, want)
		}
		if got, want := ProxyTemplate(base), "http://127.0.0.1:1234/clusters/{namespace}/{cluster}/proxy"; got != want {
			t.Errorf("ProxyTemplate(%q) = %q, want %q", base, got, want)
		}
	}
}

// discard is a ResponseWriter that drops the answer.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
