package localfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/localfleet/loadbalancer"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// The Gateway API objects the fleet makes on the hub when Options.Traffic is set; a
// PlacementPolicy's spec.traffic.parentRef names GatewayNamespace/GatewayName.
const (
	// GatewayClassName is the GatewayClass Traefik implements.
	GatewayClassName = "traefik"
	// GatewayControllerName is Traefik's controllerName for Gateway API.
	GatewayControllerName = "traefik.io/gateway-controller"
	// GatewayNamespace holds the Gateway.
	GatewayNamespace = "gateway"
	// GatewayName names the Gateway every hub HTTPRoute attaches to.
	GatewayName = "fleet"
	// GatewayListenerName names the Gateway's one HTTP listener.
	GatewayListenerName = "http"
)

// TraefikUser is the identity Traefik reads the hub's Gateway API objects as; its rights are a
// ClusterRole of the same name.
const TraefikUser = "rayfleet-traefik"

// loadBalancerUser is the identity the members' load balancer stand-ins work as (in
// system:masters, like a cloud's controller), for audit logs to tell their writes apart.
const loadBalancerUser = "rayfleet-loadbalancer"

// traefikEntryPoint names Traefik's one entrypoint, which serves the Gateway's listener: Traefik
// attaches a listener to the entrypoint of the same port.
const traefikEntryPoint = "web"

// gatewayTimeout bounds the wait for Traefik to program the Gateway.
const gatewayTimeout = 2 * time.Minute

// TrafficOptions turn on a real traffic path through the fleet: Gateway API and Traefik on the
// hub, and a load balancer stand-in per member (see package loadbalancer), whose hub guard
// `rayfleet join --allow-node-ports` lets the hub ask for LoadBalancer Services.
type TrafficOptions struct {
	// ServeIPs is the address each member's load balancer stand-in gives LoadBalancer Services
	// and listens on, by member name; every member needs its own. Addresses other than
	// 127.0.0.1 serve only where they are assigned to an interface (the e2e tests' network
	// namespace); elsewhere the Services still get them, and requests fail.
	ServeIPs map[string]string
	// GatewayPort is the port on 127.0.0.1 of Traefik's entrypoint and of the Gateway's
	// listener; 0 picks a free one.
	GatewayPort int
	// Isolated runs Traefik and the load balancer stand-ins in a network namespace of the
	// fleet's own, with the serve IPs on its loopback interface, the hub's API server forwarded
	// in and Traefik's ports forwarded out to 127.0.0.1 on the host: requests to GatewayURL
	// then reach the members from a host where the serve IPs are not assigned (and must not
	// be). Root only.
	Isolated bool
}

// trafficNSAddr is the traffic namespace's own address (Options.Traffic.Isolated), clear of
// the real Nodes' 10.200.10.0/24 and up.
var trafficNSAddr = netip.MustParsePrefix("10.200.9.1/24")

// validate rejects traffic options that cannot work for members.
func (t *TrafficOptions) validate(members []MemberSpec) error {
	owner := map[string]string{}
	for _, m := range members {
		ip, ok := t.ServeIPs[m.Name]
		if !ok {
			return fmt.Errorf("traffic: no serve IP for member %s", m.Name)
		}
		if net.ParseIP(ip) == nil {
			return fmt.Errorf("traffic: serve IP %q of member %s is not an IP address", ip, m.Name)
		}
		// Two stand-ins on one address would both listen on the serve port.
		if other, taken := owner[ip]; taken {
			return fmt.Errorf("traffic: members %s and %s share serve IP %s", other, m.Name, ip)
		}
		owner[ip] = m.Name
	}
	if t.GatewayPort < 0 || t.GatewayPort > 65535 {
		return fmt.Errorf("traffic: gateway port %d out of range", t.GatewayPort)
	}
	return nil
}

// startTraffic gives the hub Traefik and the Gateway, and waits until Traefik has programmed
// it: from then on GatewayURL routes whatever HTTPRoutes attach to it.
func (f *Fleet) startTraffic(ctx context.Context) error {
	port := f.opts.Traffic.GatewayPort
	if port == 0 {
		var err error
		if port, err = localcluster.FreePort(); err != nil {
			return err
		}
	}
	if err := f.createTraefikAccess(ctx); err != nil {
		return err
	}
	if err := f.createGateway(ctx, port); err != nil {
		return err
	}
	kubeconfig, _, err := f.Hub.UserKubeconfig(TraefikUser, TraefikUser)
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	adminPort, err := localcluster.FreePort()
	if err != nil {
		return err
	}
	admin := net.JoinHostPort("127.0.0.1", strconv.Itoa(adminPort))
	ns, err := f.trafficNetNS(addr, admin)
	if err != nil {
		return err
	}
	args := []string{
		"--global.checknewversion=false", "--global.sendanonymoususage=false",
		"--log.level=INFO", "--log.nocolor=true", "--accesslog=true",
		"--entryPoints." + traefikEntryPoint + ".address=" + addr,
		"--providers.kubernetesgateway=true",
		// The API on its own loopback entrypoint: read-only, no Gateway listener uses that port.
		"--api=true", "--api.insecure=true", "--api.dashboard=false",
		"--entryPoints.traefik.address=" + admin,
		// Without it Traefik leaves the Gateway's status.addresses empty.
		"--providers.kubernetesgateway.statusaddress.ip=127.0.0.1",
	}
	// Traefik takes its client from KUBECONFIG unless it believes it runs in a Pod, which an
	// inherited KUBERNETES_SERVICE_HOST would make it.
	env := []string{"KUBECONFIG=" + kubeconfig, "KUBERNETES_SERVICE_HOST=", "KUBERNETES_SERVICE_PORT="}
	p, err := f.Hub.StartProcessIn(ns, "traefik", filepath.Join(f.opts.BinDir, "traefik"), args, env)
	if err != nil {
		return fmt.Errorf("starting traefik: %w", err)
	}
	f.mu.Lock()
	f.Traefik = p
	f.GatewayURL = "http://" + addr
	f.GatewayAdminURL = "http://" + admin
	f.mu.Unlock()
	return f.waitGateway(ctx, p)
}

// trafficNetNS makes the namespace Traefik and the load balancers run in with
// TrafficOptions.Isolated: the serve IPs on its loopback, the hub's API server forwarded in at
// the address Traefik's kubeconfig names, and Traefik's entrypoints (gateway and admin, both
// host:port on 127.0.0.1) forwarded out. It returns nil, and makes nothing, without Isolated.
func (f *Fleet) trafficNetNS(gateway, admin string) (*localcluster.NetNS, error) {
	if !f.opts.Traffic.Isolated {
		return nil, nil
	}
	ns, err := localcluster.CreateNetNS(NetNSPrefix(os.Getpid())+"traffic", trafficNSAddr)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.closers = append(f.closers, ns)
	f.trafficNS = ns
	f.mu.Unlock()
	for _, ip := range f.opts.Traffic.ServeIPs {
		addr, parseErr := netip.ParseAddr(ip) // validate checked it
		if parseErr != nil {
			return nil, fmt.Errorf("traffic: serve IP %q: %w", ip, parseErr)
		}
		if err = ns.AddAddress(addr); err != nil {
			return nil, err
		}
	}
	hub, err := url.Parse(f.Hub.Host())
	if err != nil {
		return nil, fmt.Errorf("parsing the hub's API server URL %s: %w", f.Hub.Host(), err)
	}
	in, err := ns.Forward(hub.Host, hub.Host)
	if err != nil {
		return nil, err
	}
	f.addCloser(in)
	for _, port := range []string{gateway, admin} {
		out, exposeErr := ns.Expose(port, port)
		if exposeErr != nil {
			return nil, exposeErr
		}
		f.addCloser(out)
	}
	return ns, nil
}

// addCloser has Stop close c.
func (f *Fleet) addCloser(c io.Closer) {
	f.mu.Lock()
	f.closers = append(f.closers, c)
	f.mu.Unlock()
}

// createTraefikAccess lets TraefikUser read what Traefik's Gateway API provider watches and
// write the status of what it programs. Secrets are among them (for TLS listeners and
// BackendTLSPolicies): the provider watches them in every namespace it serves.
func (f *Fleet) createTraefikAccess(ctx context.Context) error {
	read := []string{"get", "list", "watch"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: TraefikUser},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"services", "secrets", "configmaps"}, Verbs: read},
			{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}, Verbs: []string{"list", "watch"}},
			{APIGroups: []string{gwv1.GroupName}, Verbs: read, Resources: []string{
				"gatewayclasses", "gateways", "httproutes", "grpcroutes", "referencegrants", "backendtlspolicies"}},
			{APIGroups: []string{gwv1.GroupName}, Verbs: []string{"update"}, Resources: []string{
				"gatewayclasses/status", "gateways/status", "httproutes/status", "grpcroutes/status", "backendtlspolicies/status"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: TraefikUser},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: TraefikUser},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: TraefikUser}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := createIfMissing(ctx, f.Hub.Client, obj); err != nil {
			return err
		}
	}
	return nil
}

// createGateway creates the GatewayClass, the namespace and the Gateway with one HTTP listener
// on port, open to routes from every namespace: the hub's HTTPRoutes live in their RayServices'
// namespaces, whichever the tests and the samples use.
func (f *Fleet) createGateway(ctx context.Context, port int) error {
	class := &gwv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: GatewayClassName},
		Spec:       gwv1.GatewayClassSpec{ControllerName: GatewayControllerName},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: GatewayNamespace}}
	gw := &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: GatewayNamespace, Name: GatewayName},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: GatewayClassName,
			Listeners: []gwv1.Listener{{
				Name:     GatewayListenerName,
				Port:     gwv1.PortNumber(port), // validate keeps it within 0..65535
				Protocol: gwv1.HTTPProtocolType,
				AllowedRoutes: &gwv1.AllowedRoutes{
					Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromAll)},
				},
			}},
		},
	}
	for _, obj := range []client.Object{class, ns, gw} {
		if err := createIfMissing(ctx, f.Hub.Client, obj); err != nil {
			return err
		}
	}
	return nil
}

// createIfMissing creates obj on the hub; one already there (a restarted hub's) is kept.
func createIfMissing(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s on the hub: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}

// waitGateway waits until the Gateway is Accepted and Programmed, failing early when Traefik
// exits.
func (f *Fleet) waitGateway(ctx context.Context, traefik *localcluster.Process) error {
	key := client.ObjectKey{Namespace: GatewayNamespace, Name: GatewayName}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, gatewayTimeout, true, func(ctx context.Context) (bool, error) {
		if exited, exitErr := traefik.Exited(); exited {
			return false, fmt.Errorf("traefik exited (log %s): %w", traefik.LogPath, exitErr)
		}
		gw := &gwv1.Gateway{}
		if err := f.Hub.Client.Get(ctx, key, gw); err != nil {
			last = err.Error()
			return false, nil
		}
		accepted := meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionAccepted))
		programmed := meta.IsStatusConditionTrue(gw.Status.Conditions, string(gwv1.GatewayConditionProgrammed))
		last = fmt.Sprintf("conditions %v", gw.Status.Conditions)
		return accepted && programmed, nil
	})
	if err != nil {
		return fmt.Errorf("the hub's Gateway %s not Accepted and Programmed (traefik log %s; %s): %w", key, traefik.LogPath, last, err)
	}
	return nil
}

// startLoadBalancer starts the member's load balancer stand-in, logging to
// <member dir>/loadbalancer.log (or <LogDir>/<member>-loadbalancer.log).
func (f *Fleet) startLoadBalancer(ctx context.Context, name string, member *localcluster.Cluster) error {
	_, config, err := member.UserKubeconfig(loadBalancerUser)
	if err != nil {
		return err
	}
	logPath := filepath.Join(member.Dir, "loadbalancer.log")
	if f.opts.LogDir != "" {
		logPath = filepath.Join(f.opts.LogDir, name+"-loadbalancer.log")
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the load balancer's log: %w", err)
	}
	opts := loadbalancer.Options{Cluster: name, IP: f.opts.Traffic.ServeIPs[name], Config: config, Log: logFile}
	if f.realRay() {
		opts.Backend = f.dialServe(name)
	}
	f.mu.Lock()
	if ns := f.trafficNS; ns != nil {
		opts.Listen = ns.Listen
	}
	f.mu.Unlock()
	lb, err := loadbalancer.Start(ctx, opts)
	if err != nil {
		return errors.Join(err, logFile.Close())
	}
	f.mu.Lock()
	f.LoadBalancers[name] = lb
	f.closers = append(f.closers, logFile)
	f.mu.Unlock()
	return nil
}
