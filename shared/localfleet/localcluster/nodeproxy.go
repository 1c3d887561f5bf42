package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterDomain is the DNS suffix of Service names the node proxy resolves (the spoke's default).
const clusterDomain = "cluster.local"

// NodeProxy is an HTTP forward proxy on the host's loopback whose connections are opened inside
// the real Node's network namespace: a process on the host given HTTP_PROXY=URL (the spoke)
// reaches Pod IPs and Services at the addresses it would use inside the cluster. The host has
// no cluster DNS, so the proxy resolves <service>.<namespace>.svc.cluster.local itself through
// the API server, as cluster DNS would: the ClusterIP, or for a headless Service an endpoint's
// address. Plain HTTP only (no CONNECT).
type NodeProxy struct {
	// URL is the proxy's address, http://127.0.0.1:<port>.
	URL string
	srv *http.Server
}

// StartNodeProxy starts a NodeProxy into the cluster's real Node; Stop ends it (Cluster.Stop
// does not).
func (c *Cluster) StartNodeProxy() (*NodeProxy, error) {
	c.mu.Lock()
	n := c.node
	c.mu.Unlock()
	if n == nil {
		return nil, fmt.Errorf("cluster %s has no real Node", c.Name)
	}
	nsPath := n.spec.NetNS.Path
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, port, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ip, err := resolveService(ctx, c.Client, host)
			if err != nil {
				return nil, err
			}
			return DialInNetNS(ctx, nsPath, net.JoinHostPort(ip, port))
		},
		// A connection per request, as from curl: kube-proxy balances connections, and a kept
		// one would stay on an endpoint the Service no longer selects.
		DisableKeepAlives: true,
	}
	rp := &httputil.ReverseProxy{
		// A proxy request carries the absolute URL; it is sent on as it is.
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.Host = pr.In.Host },
		Transport: transport,
		// A refused dial is routine (a proxy polled before Ray serves) and reaches the client
		// as a 502; the log would only repeat it.
		ErrorLog: log.New(io.Discard, "", 0),
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() || r.URL.Scheme != "http" {
			http.Error(w, "the node proxy forwards absolute http:// URLs only", http.StatusBadRequest)
			return
		}
		rp.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &NodeProxy{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: handler}}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Stop closes the proxy and its connections.
func (p *NodeProxy) Stop() { _ = p.srv.Close() }

// resolveService maps a Service's cluster DNS name to the address cluster DNS would answer; any
// other host (a Pod IP) is returned as it is.
func resolveService(ctx context.Context, c client.Client, host string) (string, error) {
	name, namespace, ok := serviceName(host)
	if !ok {
		return host, nil
	}
	var svc corev1.Service
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &svc); err != nil {
		return "", fmt.Errorf("resolving %s: %w", host, err)
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		return ip, nil
	}
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: name}); err != nil {
		return "", fmt.Errorf("resolving %s: %w", host, err)
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
			if len(ep.Addresses) > 0 && (ready || svc.Spec.PublishNotReadyAddresses) {
				return ep.Addresses[0], nil
			}
		}
	}
	return "", errors.New("resolving " + host + ": the headless Service has no endpoint addresses")
}

// serviceName splits <service>.<namespace>.svc.cluster.local.
func serviceName(host string) (name, namespace string, ok bool) {
	rest, found := strings.CutSuffix(host, ".svc."+clusterDomain)
	if !found {
		return "", "", false
	}
	name, namespace, found = strings.Cut(rest, ".")
	if !found || name == "" || namespace == "" || strings.Contains(namespace, ".") {
		return "", "", false
	}
	return name, namespace, true
}
