package rayservice

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/spoke/builder"
)

// The serve address tells the hub where a member serves a copy of its RayService from outside
// the member, so that the hub can route traffic to it: the serve Service's LoadBalancer
// ingress, else a node port on a Node's address. KubeRay has no such thing; the spoke keeps it
// on the hub's copies only, next to the running annotations and in the same patch.
//
// +kubebuilder:rbac:groups=core,resources=nodes,verbs=list

// nodeListTTL is how long the Nodes read for node-port addresses are reused. The spoke keeps no
// Node informer of its own for this (the reporter's is trimmed of addresses and runs on its own
// cache): a NodePort RayService's address follows Node changes through the periodic requeue
// (requeueSoon), once the list read through the API reader is older than this.
const nodeListTTL = 30 * time.Second

// nodeListPage bounds one page of the Node list: a Node's status lists its images and can be
// tens of KiB, and only its name, addresses and readiness are kept.
const nodeListPage = 500

// servePortName is the name of the serve port of a serve Service, as the builder names it.
const servePortName = "serve"

// serveServiceName is the Service that serves rs from the outside: its own serve Service, or
// during an incremental upgrade the active cluster's, whose endpoints numServeEndpoints counts.
func serveServiceName(s *scope) string {
	if s.incremental && s.active != nil {
		return builder.ClusterServeServiceName(s.active)
	}
	return builder.RayServiceServeServiceName(s.rs)
}

// serveAddress decides where svc (named name; nil when it does not exist) is reached from
// outside the member: address is "host:port", or empty with why saying what is missing.
// endpoints is the RayService's numServeEndpoints; nodes returns the member's Nodes and is
// called only for a node port.
//
// A LoadBalancer with an ingress is reached on its first ingress (IP, else hostname) at the
// serve port; a NodePort, or a LoadBalancer still without ingress but with node ports, on
// nodeAddress at the serve port's node port. Anything else is not reachable from outside.
func serveAddress(name string, svc *corev1.Service, endpoints int32, nodes func() ([]corev1.Node, error)) (address, why string, err error) {
	if svc == nil {
		return "", fmt.Sprintf("serve Service %s does not exist yet", name), nil
	}
	typ := svc.Spec.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	if typ != corev1.ServiceTypeLoadBalancer && typ != corev1.ServiceTypeNodePort {
		return "", fmt.Sprintf("serve Service %s is %s: set spec.serveService.spec.type to LoadBalancer or NodePort to route traffic to this member",
			name, typ), nil
	}
	port, ok := servePort(svc)
	if !ok {
		return "", fmt.Sprintf("serve Service %s has no ports", name), nil
	}
	if endpoints <= 0 {
		return "", fmt.Sprintf("serve Service %s has no ready serve endpoints", name), nil
	}
	if typ == corev1.ServiceTypeLoadBalancer {
		if host := ingressHost(svc); host != "" {
			return net.JoinHostPort(host, strconv.Itoa(int(port.Port))), "", nil
		}
		if port.NodePort == 0 {
			return "", fmt.Sprintf("LoadBalancer serve Service %s has no ingress address yet", name), nil
		}
	}
	if port.NodePort == 0 {
		return "", fmt.Sprintf("NodePort serve Service %s has no node port yet", name), nil
	}
	list, err := nodes()
	if err != nil {
		return "", "", err
	}
	host, ok := nodeAddress(list)
	if !ok {
		if typ == corev1.ServiceTypeLoadBalancer {
			return "", fmt.Sprintf("LoadBalancer serve Service %s has no ingress address yet, and no Ready Node has an address for its node port %d",
				name, port.NodePort), nil
		}
		return "", fmt.Sprintf("no Ready Node has an address for node port %d of serve Service %s", port.NodePort, name), nil
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port.NodePort))), "", nil
}

// gatewayAddress is where gw (nil when it does not exist) takes requests from outside the
// member: its first status address at its first HTTP listener's port; "" when it has neither.
func gatewayAddress(gw *gwv1.Gateway) string {
	if gw == nil || len(gw.Status.Addresses) == 0 {
		return ""
	}
	for _, l := range gw.Spec.Listeners {
		if l.Protocol == gwv1.HTTPProtocolType {
			return net.JoinHostPort(gw.Status.Addresses[0].Value, strconv.Itoa(int(l.Port)))
		}
	}
	return ""
}

// servePort returns svc's port named "serve", else its first port.
func servePort(svc *corev1.Service) (corev1.ServicePort, bool) {
	if len(svc.Spec.Ports) == 0 {
		return corev1.ServicePort{}, false
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == servePortName {
			return p, true
		}
	}
	return svc.Spec.Ports[0], true
}

// ingressHost is the first LoadBalancer ingress of svc that has an address: its IP, else its
// hostname; empty when there is none.
func ingressHost(svc *corev1.Service) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			return in.IP
		}
		if in.Hostname != "" {
			return in.Hostname
		}
	}
	return ""
}

// nodeAddressPreference orders the kinds of Node address: one reachable from outside the
// member first.
var nodeAddressPreference = []corev1.NodeAddressType{
	corev1.NodeExternalIP, corev1.NodeExternalDNS, corev1.NodeInternalIP, corev1.NodeInternalDNS, corev1.NodeHostName,
}

// nodeAddress picks the address a node port is reached on: of the Ready Nodes not being
// deleted, the most preferred kind of address any of them has, taken from the one with the
// lowest name, so that the choice does not move between equally good Nodes.
func nodeAddress(nodes []corev1.Node) (string, bool) {
	ready := make([]*corev1.Node, 0, len(nodes))
	for i := range nodes {
		if nodeReady(&nodes[i]) && nodes[i].DeletionTimestamp == nil {
			ready = append(ready, &nodes[i])
		}
	}
	slices.SortFunc(ready, func(a, b *corev1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, kind := range nodeAddressPreference {
		for _, n := range ready {
			for _, a := range n.Status.Addresses {
				if a.Type == kind && a.Address != "" {
					return a.Address, true
				}
			}
		}
	}
	return "", false
}

// nodeReady reports whether node's Ready condition is True.
func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// nodeLister reads the member's Nodes through the API reader at most once per nodeListTTL,
// keeping of each only what nodeAddress reads. It is shared by all RayServices.
type nodeLister struct {
	reader client.Reader
	clock  clock.PassiveClock

	mu    sync.Mutex
	nodes []corev1.Node
	at    time.Time
	read  bool
}

func newNodeLister(reader client.Reader, clk clock.PassiveClock) *nodeLister {
	return &nodeLister{reader: reader, clock: clk}
}

// list returns the Nodes, read again when the last read is older than nodeListTTL.
func (l *nodeLister) list(ctx context.Context) ([]corev1.Node, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.read && l.clock.Since(l.at) < nodeListTTL {
		return l.nodes, nil
	}
	var nodes []corev1.Node
	var page corev1.NodeList
	for {
		if err := l.reader.List(ctx, &page, client.Limit(nodeListPage), client.Continue(page.Continue)); err != nil {
			return nil, fmt.Errorf("list Nodes for node-port serve addresses: %w", err)
		}
		for i := range page.Items {
			nodes = append(nodes, trimNode(&page.Items[i]))
		}
		if page.Continue == "" {
			break
		}
	}
	l.nodes, l.at, l.read = nodes, l.clock.Now(), true
	return nodes, nil
}

// trimNode keeps of node what nodeAddress reads.
func trimNode(node *corev1.Node) corev1.Node {
	out := corev1.Node{}
	out.Name = node.Name
	out.DeletionTimestamp = node.DeletionTimestamp
	out.Status.Addresses = node.Status.Addresses
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Status.Conditions = []corev1.NodeCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return out
}

// serveAddressPatch returns the changes to the serve-address annotations of a hub copy as
// merge-patch entries (nil removes a key): ServeAddress when the serve Service is reachable
// from outside, else NoServeAddress saying why; nil when current already says so. endpoints
// is the numServeEndpoints of the status just computed.
func (r *Reconciler) serveAddressPatch(ctx context.Context, s *scope, endpoints int32) (map[string]*string, error) {
	name := serveServiceName(s)
	svc, err := getOptional(ctx, r.client, s.rs.Namespace, name, &corev1.Service{})
	if err != nil {
		return nil, fmt.Errorf("read serve Service of RayService %s: %w", s.key, err)
	}
	address, why, err := serveAddress(name, svc, endpoints, func() ([]corev1.Node, error) { return r.nodes.list(ctx) })
	if err != nil {
		return nil, fmt.Errorf("serve address of RayService %s: %w", s.key, err)
	}
	if address == "" && s.incremental && endpoints > 0 {
		// Without a LoadBalancer ingress, the Gateway an incremental upgrade routes through is
		// the member's own entry point for the RayService, ahead of a node port.
		gw, err := getOptional(ctx, r.client, s.rs.Namespace, builder.GatewayName(s.rs), &gwv1.Gateway{})
		switch {
		case meta.IsNoMatchError(err):
			gw = nil // Gateway API is not installed: there is no Gateway to report.
		case err != nil:
			return nil, fmt.Errorf("read Gateway of RayService %s: %w", s.key, err)
		}
		if gwAddress := gatewayAddress(gw); gwAddress != "" {
			address, why = gwAddress, ""
		}
	}
	want := map[string]string{labels.ServeAddress: address, labels.NoServeAddress: why}
	var patch map[string]*string
	for k, v := range want {
		have, ok := s.rs.Annotations[k]
		switch {
		case v == "" && ok:
			patch = setPatch(patch, k, nil)
		case v != "" && have != v:
			patch = setPatch(patch, k, &v)
		}
	}
	return patch, nil
}
