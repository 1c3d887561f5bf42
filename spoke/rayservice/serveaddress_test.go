package rayservice

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

func serveSvc(typ corev1.ServiceType, mutate ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "demo-serve-svc", Namespace: "ns"},
		Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{
			{Name: "dashboard", Port: 8265, NodePort: 30265},
			{Name: "serve", Port: 8000, NodePort: 30800},
		}},
	}
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

func withIngress(ingress ...corev1.LoadBalancerIngress) func(*corev1.Service) {
	return func(svc *corev1.Service) { svc.Status.LoadBalancer.Ingress = ingress }
}

func node(name string, ready bool, addresses ...corev1.NodeAddress) corev1.Node {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Addresses:  addresses,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}},
		},
	}
}

func addr(t corev1.NodeAddressType, a string) corev1.NodeAddress {
	return corev1.NodeAddress{Type: t, Address: a}
}

func TestServeAddress(t *testing.T) {
	nodes := []corev1.Node{
		node("b", true, addr(corev1.NodeInternalIP, "10.0.0.2"), addr(corev1.NodeExternalIP, "203.0.113.2")),
		node("a", true, addr(corev1.NodeInternalIP, "10.0.0.1"), addr(corev1.NodeHostName, "a")),
		node("c", false, addr(corev1.NodeExternalIP, "203.0.113.3")),
	}
	tests := []struct {
		name      string
		svc       *corev1.Service
		endpoints int32
		nodes     []corev1.Node
		want      string
		wantWhy   string
	}{
		{
			name: "LoadBalancer with an IP", endpoints: 1,
			svc:  serveSvc(corev1.ServiceTypeLoadBalancer, withIngress(corev1.LoadBalancerIngress{IP: "198.51.100.7", Hostname: "lb.example.com"})),
			want: "198.51.100.7:8000",
		},
		{
			name: "LoadBalancer with a hostname only", endpoints: 1,
			svc:  serveSvc(corev1.ServiceTypeLoadBalancer, withIngress(corev1.LoadBalancerIngress{Hostname: "lb.example.com"})),
			want: "lb.example.com:8000",
		},
		{
			name: "LoadBalancer with an IPv6 ingress", endpoints: 1,
			svc:  serveSvc(corev1.ServiceTypeLoadBalancer, withIngress(corev1.LoadBalancerIngress{IP: "2001:db8::7"})),
			want: "[2001:db8::7]:8000",
		},
		{
			name: "LoadBalancer pending falls back to a node port", endpoints: 1, nodes: nodes,
			svc:  serveSvc(corev1.ServiceTypeLoadBalancer),
			want: "203.0.113.2:30800",
		},
		{
			name: "LoadBalancer pending without node ports", endpoints: 1, nodes: nodes,
			svc: serveSvc(corev1.ServiceTypeLoadBalancer, func(svc *corev1.Service) {
				for i := range svc.Spec.Ports {
					svc.Spec.Ports[i].NodePort = 0
				}
			}),
			wantWhy: "LoadBalancer serve Service demo-serve-svc has no ingress address yet",
		},
		{
			name: "LoadBalancer pending and no Ready Node", endpoints: 1, nodes: nodes[2:],
			svc:     serveSvc(corev1.ServiceTypeLoadBalancer),
			wantWhy: "LoadBalancer serve Service demo-serve-svc has no ingress address yet, and no Ready Node has an address for its node port 30800",
		},
		{
			name: "NodePort on a Ready Node's ExternalIP, whichever Node has one", endpoints: 2, nodes: nodes,
			svc:  serveSvc(corev1.ServiceTypeNodePort),
			want: "203.0.113.2:30800",
		},
		{
			name: "NodePort on the InternalIP of the lowest Node name", endpoints: 1,
			nodes: []corev1.Node{
				node("b", true, addr(corev1.NodeInternalIP, "10.0.0.2")),
				node("a", true, addr(corev1.NodeInternalIP, "10.0.0.1")),
			},
			svc:  serveSvc(corev1.ServiceTypeNodePort),
			want: "10.0.0.1:30800",
		},
		{
			name: "NodePort on a Node with only a Hostname", endpoints: 1,
			nodes: []corev1.Node{node("kind-worker", true, addr(corev1.NodeHostName, "kind-worker"))},
			svc:   serveSvc(corev1.ServiceTypeNodePort),
			want:  "kind-worker:30800",
		},
		{
			name: "NodePort without a port named serve uses the first", endpoints: 1, nodes: nodes,
			svc: serveSvc(corev1.ServiceTypeNodePort, func(svc *corev1.Service) {
				svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 31080}, {Name: "grpc", Port: 9000, NodePort: 31900}}
			}),
			want: "203.0.113.2:31080",
		},
		{
			name: "NodePort and no Ready Node", endpoints: 1, nodes: nodes[2:],
			svc:     serveSvc(corev1.ServiceTypeNodePort),
			wantWhy: "no Ready Node has an address for node port 30800 of serve Service demo-serve-svc",
		},
		{
			name: "ClusterIP", endpoints: 1, nodes: nodes,
			svc:     serveSvc(corev1.ServiceTypeClusterIP),
			wantWhy: "serve Service demo-serve-svc is ClusterIP: set spec.serveService.spec.type to LoadBalancer or NodePort to route traffic to this member",
		},
		{
			name: "no type is ClusterIP", endpoints: 1,
			svc:     serveSvc(""),
			wantWhy: "serve Service demo-serve-svc is ClusterIP: set spec.serveService.spec.type to LoadBalancer or NodePort to route traffic to this member",
		},
		{
			name: "no serve endpoints", endpoints: 0,
			svc:     serveSvc(corev1.ServiceTypeLoadBalancer, withIngress(corev1.LoadBalancerIngress{IP: "198.51.100.7"})),
			wantWhy: "serve Service demo-serve-svc has no ready serve endpoints",
		},
		{
			name: "no serve Service", endpoints: 0,
			wantWhy: "serve Service demo-serve-svc does not exist yet",
		},
		{
			name: "no ports", endpoints: 1,
			svc:     serveSvc(corev1.ServiceTypeNodePort, func(svc *corev1.Service) { svc.Spec.Ports = nil }),
			wantWhy: "serve Service demo-serve-svc has no ports",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			listed := false
			got, why, err := serveAddress("demo-serve-svc", tt.svc, tt.endpoints, func() ([]corev1.Node, error) {
				listed = true
				return tt.nodes, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want || why != tt.wantWhy {
				t.Errorf("serveAddress = %q, %q; want %q, %q", got, why, tt.want, tt.wantWhy)
			}
			if listed && tt.nodes == nil {
				t.Errorf("listed Nodes without needing them")
			}
		})
	}
}

func TestServeAddressNodeListFailure(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := serveAddress("demo-serve-svc", serveSvc(corev1.ServiceTypeNodePort), 1, func() ([]corev1.Node, error) { return nil, boom })
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

func TestNodeAddressSkipsNodesBeingDeleted(t *testing.T) {
	deleting := node("a", true, addr(corev1.NodeExternalIP, "203.0.113.1"))
	deleting.DeletionTimestamp = &metav1.Time{}
	got, ok := nodeAddress([]corev1.Node{deleting, node("b", true, addr(corev1.NodeInternalIP, "10.0.0.2"))})
	if !ok || got != "10.0.0.2" {
		t.Errorf("nodeAddress = %q, %v; want 10.0.0.2", got, ok)
	}
}

func TestGatewayAddress(t *testing.T) {
	listener := func(p gwv1.ProtocolType, port gwv1.PortNumber) gwv1.Listener {
		return gwv1.Listener{Name: "l", Protocol: p, Port: port}
	}
	gateway := func(addresses []string, listeners ...gwv1.Listener) *gwv1.Gateway {
		gw := &gwv1.Gateway{Spec: gwv1.GatewaySpec{Listeners: listeners}}
		for _, a := range addresses {
			gw.Status.Addresses = append(gw.Status.Addresses, gwv1.GatewayStatusAddress{Value: a})
		}
		return gw
	}
	tests := []struct {
		name string
		gw   *gwv1.Gateway
		want string
	}{
		{name: "no Gateway", gw: nil, want: ""},
		{name: "no address yet", gw: gateway(nil, listener(gwv1.HTTPProtocolType, 80)), want: ""},
		{name: "an IP at the HTTP listener's port", gw: gateway([]string{"198.51.100.9", "198.51.100.10"}, listener(gwv1.HTTPProtocolType, 80)),
			want: "198.51.100.9:80"},
		{name: "a hostname", gw: gateway([]string{"gw.example.com"}, listener(gwv1.HTTPProtocolType, 8080)), want: "gw.example.com:8080"},
		{name: "IPv6", gw: gateway([]string{"2001:db8::9"}, listener(gwv1.HTTPProtocolType, 80)), want: "[2001:db8::9]:80"},
		{name: "the first HTTP listener", gw: gateway([]string{"198.51.100.9"}, listener(gwv1.HTTPSProtocolType, 443), listener(gwv1.HTTPProtocolType, 80)),
			want: "198.51.100.9:80"},
		{name: "no HTTP listener", gw: gateway([]string{"198.51.100.9"}, listener(gwv1.TLSProtocolType, 443)), want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := gatewayAddress(tt.gw); got != tt.want {
				t.Errorf("gatewayAddress = %q, want %q", got, tt.want)
			}
		})
	}
}
