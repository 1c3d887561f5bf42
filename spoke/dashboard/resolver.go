package dashboard

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
)

// Resolver maps a Ray cluster's endpoints to URLs the spoke can reach. The default resolves the
// in-cluster DNS name of the head Service; the local fleet (tests, demo) maps them to loopback.
type Resolver interface {
	// DashboardURL is the base URL of the cluster's dashboard, given its head Service and the
	// Service's dashboard port.
	DashboardURL(rc *rayv1.RayCluster, headService *corev1.Service, port int32) string
	// ProxyURL is the base URL of the Serve HTTP proxy on pod (the head Pod) listening on port.
	ProxyURL(rc *rayv1.RayCluster, pod *corev1.Pod, port int32) string
}

// Default templates: KubeRay's addresses, the head Service's FQDN for the dashboard and the
// Pod IP for the proxy (each Pod runs its own proxy, so the Service would not do).
const (
	// DefaultDashboardTemplate is the head Service's in-cluster DNS name and dashboard port.
	DefaultDashboardTemplate = "http://{service}.{namespace}.svc.{domain}:{port}"
	// DefaultProxyTemplate is the Pod's IP and Serve port.
	DefaultProxyTemplate = "http://{podIP}:{port}"
)

// defaultClusterDomain is the cluster DNS suffix when none is configured, as for KubeRay.
const defaultClusterDomain = "cluster.local"

// Template placeholders.
const (
	phNamespace = "namespace"
	phCluster   = "cluster"
	phService   = "service"
	phPort      = "port"
	phDomain    = "domain"
	phPod       = "pod"
	phPodIP     = "podIP"
)

var (
	dashboardPlaceholders = []string{phNamespace, phCluster, phService, phPort, phDomain}
	proxyPlaceholders     = []string{phNamespace, phCluster, phPod, phPodIP, phPort}
)

// TemplateResolver fills URL templates. Placeholders: {namespace} {cluster} {service} {port} {domain}
// for dashboards; {namespace} {cluster} {pod} {podIP} {port} for proxies.
//
// A value that lands in a URL's host is used as is, an IPv6 address bracketed; one that lands
// in its path is path-escaped.
type TemplateResolver struct {
	dashboard urlTemplate
	proxy     urlTemplate
	domain    string
}

var _ Resolver = (*TemplateResolver)(nil)

// NewTemplateResolver validates the templates (parseable URL with scheme http/https, only known
// placeholders) and returns a resolver; clusterDomain "" means "cluster.local". An empty
// template means the default one.
func NewTemplateResolver(dashboardTemplate, proxyTemplate, clusterDomain string) (*TemplateResolver, error) {
	if dashboardTemplate == "" {
		dashboardTemplate = DefaultDashboardTemplate
	}
	if proxyTemplate == "" {
		proxyTemplate = DefaultProxyTemplate
	}
	if clusterDomain == "" {
		clusterDomain = defaultClusterDomain
	}
	dashboard, err := parseURLTemplate(dashboardTemplate, dashboardPlaceholders)
	if err != nil {
		return nil, fmt.Errorf("dashboard URL template %q: %w", dashboardTemplate, err)
	}
	proxy, err := parseURLTemplate(proxyTemplate, proxyPlaceholders)
	if err != nil {
		return nil, fmt.Errorf("proxy URL template %q: %w", proxyTemplate, err)
	}
	return &TemplateResolver{dashboard: dashboard, proxy: proxy, domain: clusterDomain}, nil
}

// DashboardURL implements Resolver. The Service's namespace is the RayCluster's when unset.
func (r *TemplateResolver) DashboardURL(rc *rayv1.RayCluster, headService *corev1.Service, port int32) string {
	var cluster, namespace, service string
	if rc != nil {
		cluster, namespace = rc.Name, rc.Namespace
	}
	if headService != nil {
		service = headService.Name
		if headService.Namespace != "" {
			namespace = headService.Namespace
		}
	}
	return r.dashboard.render(map[string]string{
		phNamespace: namespace,
		phCluster:   cluster,
		phService:   service,
		phPort:      strconv.Itoa(int(port)),
		phDomain:    r.domain,
	})
}

// ProxyURL implements Resolver. A Pod without an IP yet gives a URL without a host (with the
// default template), which fails when used; callers check the Pod is running first.
func (r *TemplateResolver) ProxyURL(rc *rayv1.RayCluster, pod *corev1.Pod, port int32) string {
	var cluster, namespace, podName, podIP string
	if rc != nil {
		cluster, namespace = rc.Name, rc.Namespace
	}
	if pod != nil {
		podName, podIP = pod.Name, pod.Status.PodIP
		if pod.Namespace != "" {
			namespace = pod.Namespace
		}
	}
	return r.proxy.render(map[string]string{
		phNamespace: namespace,
		phCluster:   cluster,
		phPod:       podName,
		phPodIP:     podIP,
		phPort:      strconv.Itoa(int(port)),
	})
}

// urlTemplate is a parsed template: literal text and placeholders, in order.
type urlTemplate struct {
	parts []templatePart
}

// templatePart is a literal (name empty) or a placeholder.
type templatePart struct {
	literal string
	name    string
	// inHost tells that the placeholder is part of the URL's authority (host and port).
	inHost bool
}

// parseURLTemplate splits raw into parts, rejecting unknown placeholders and stray braces, and
// checks that it renders to an http(s) URL with a host that a path can be appended to.
func parseURLTemplate(raw string, allowed []string) (urlTemplate, error) {
	hostEnd := authorityEnd(raw)
	var t urlTemplate
	rest, offset := raw, 0
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, templatePart{literal: rest})
			break
		}
		if rest[open] == '}' {
			return urlTemplate{}, fmt.Errorf("unmatched %q at offset %d", "}", offset+open)
		}
		closing := strings.IndexAny(rest[open+1:], "{}")
		if closing < 0 || rest[open+1+closing] != '}' {
			return urlTemplate{}, fmt.Errorf("unmatched %q at offset %d", "{", offset+open)
		}
		name := rest[open+1 : open+1+closing]
		if !slices.Contains(allowed, name) {
			return urlTemplate{}, fmt.Errorf("unknown placeholder {%s}; known: {%s}", name, strings.Join(allowed, "} {"))
		}
		if open > 0 {
			t.parts = append(t.parts, templatePart{literal: rest[:open]})
		}
		t.parts = append(t.parts, templatePart{name: name, inHost: offset+open < hostEnd})
		consumed := open + closing + 2
		rest, offset = rest[consumed:], offset+consumed
	}
	if err := t.check(); err != nil {
		return urlTemplate{}, err
	}
	return t, nil
}

// authorityEnd is the offset in a URL (template) where its authority ends: the first '/', '?'
// or '#' after "://", or the end. Without "://" nothing counts as the host.
func authorityEnd(raw string) int {
	start := strings.Index(raw, "://")
	if start < 0 {
		return 0
	}
	start += len("://")
	if end := strings.IndexAny(raw[start:], "/?#"); end >= 0 {
		return start + end
	}
	return len(raw)
}

// check renders t with sample values, an IPv6 Pod IP among them, and verifies the result.
func (t urlTemplate) check() error {
	for _, podIP := range []string{"10.0.0.1", "fd00::1"} {
		rendered := t.render(map[string]string{
			phNamespace: "ns", phCluster: "rc", phService: "rc-head-svc", phPort: "8265",
			phDomain: defaultClusterDomain, phPod: "rc-head", phPodIP: podIP,
		})
		u, err := url.Parse(rendered)
		if err != nil {
			return fmt.Errorf("not a URL: %w", err)
		}
		if u.Scheme != "http" && u.Scheme != "https" {
			return fmt.Errorf("scheme must be http or https, got %q", u.Scheme)
		}
		if u.Host == "" {
			return fmt.Errorf("no host in %q", rendered)
		}
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return fmt.Errorf("a query or fragment would precede the API path appended to %q", rendered)
		}
		if u.User != nil {
			return fmt.Errorf("credentials in the URL %q would end up in logs and errors", rendered)
		}
	}
	return nil
}

// render fills the placeholders with values and drops a trailing slash, the API paths being
// appended with their own.
func (t urlTemplate) render(values map[string]string) string {
	var b strings.Builder
	for _, p := range t.parts {
		if p.name == "" {
			b.WriteString(p.literal)
			continue
		}
		v := values[p.name]
		switch {
		case p.inHost && p.name == phPodIP:
			v = hostIP(v)
		case !p.inHost:
			v = url.PathEscape(v)
		}
		b.WriteString(v)
	}
	return strings.TrimRight(b.String(), "/")
}

// hostIP brackets an IPv6 address for use as a URL host; anything else is returned unchanged.
func hostIP(ip string) string {
	if addr, err := netip.ParseAddr(ip); err == nil && addr.Is6() {
		return "[" + ip + "]"
	}
	return ip
}
