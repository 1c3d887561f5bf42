package loadbalancer

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// ClusterHeader is the response header in which a forwarding stand-in (Options.Backend) names
// its member, since the Serve proxy's answer does not say which cluster gave it.
const ClusterHeader = "X-Rayfleet-Cluster"

// forwarder forwards every request on port to Options.Backend's connection for the Service
// holding the port, or answers 503 while SetFailing holds or no Service holds the port.
func (c *Controller) forwarder(port int32) http.Handler {
	transport := &http.Transport{
		// The address is the request's (the serve IP); the Service holding the port decides
		// where the connection really goes.
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			svc, err := c.holder(port)
			if err != nil {
				return nil, err
			}
			return c.opts.Backend(ctx, svc, port)
		},
		MaxIdleConnsPerHost: 16,
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", pr.In.Host
			pr.Out.Host = pr.In.Host
		},
		Transport: transport,
		ErrorLog:  c.log,
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(ClusterHeader, c.opts.Cluster)
			return nil
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.failing.Load() {
			http.Error(w, "serve endpoint of "+c.opts.Cluster+" failing (injected fault)", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	})
}

// holder is the Service holding port now, from the cache.
func (c *Controller) holder(port int32) (*corev1.Service, error) {
	c.mu.Lock()
	cl := c.ports[port]
	c.mu.Unlock()
	if cl == nil {
		return nil, fmt.Errorf("no Service of %s holds port %d", c.opts.Cluster, port)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(cl.service)
	if err != nil {
		return nil, err
	}
	svc, err := c.services.Services(ns).Get(name)
	if err != nil {
		return nil, fmt.Errorf("Service %s holding port %d of %s: %w", cl.service, port, c.opts.Cluster, err)
	}
	return svc, nil
}
