package localfleet

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// RealNodes gives the hub and every member one real Node each (localcluster.RealNode), in a
// network namespace of its own. The Nodes carry the taint localcluster.RealNodeTaintKey, so
// the Ray Pods, which tolerate nothing, stay on kwok's Nodes; bin/hub and bin/spoke still run
// on the host. With Ray set, the members' Ray runs on their Nodes instead. Root only.
type RealNodes struct {
	// Images are the image tarballs every Node imports (make image's rayfleet.tar and
	// pause.tar).
	Images []string
	// SandboxImage is the pause image's name; it must be among Images.
	SandboxImage string
	// Runc is the runc binary; default the one on PATH.
	Runc string
	// Ray runs the members' Ray for real (Images must hold the Ray image): only members get a
	// Node, untainted; each spoke reaches its Ray's dashboard and Serve proxy at their
	// in-cluster addresses through a localcluster.NodeProxy (HTTP_PROXY) instead of a
	// dashboard stand-in; with Options.Traffic each load balancer stand-in forwards requests
	// to the serve Service's ClusterIP inside the Node's namespace, where Ray's Serve proxy
	// answers them. A member's MemberSpec.Nodes (kwok) run beside its real Node, e.g. for GPU
	// workers that are only counted; taint them to keep the heads on the real Node.
	Ray bool
}

// NetNSPrefix begins the name of every network namespace a fleet started by process pid
// makes (real Nodes, the isolated traffic path): whoever finds that process killed can remove
// what it left.
func NetNSPrefix(pid int) string { return fmt.Sprintf("rf-fleet-%d-", pid) }

// realRay reports whether the members run real Ray (RealNodes.Ray).
func (f *Fleet) realRay() bool {
	return f.opts.RealNodes != nil && f.opts.RealNodes.Ray
}

// realNodeAddr is the i-th cluster's Node address (hub 0, then the members in order): one /24
// per namespace, clear of the 10.200.0.x-2.x the e2e tests' own Nodes use.
func realNodeAddr(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200, byte(10 + i), 1}), 24)
}

// realNode creates the i-th cluster's network namespace, removed when the fleet stops, and
// returns the Node to start in it; nil without Options.RealNodes.
func (f *Fleet) realNode(i int, cluster string) (*localcluster.RealNode, error) {
	spec := f.opts.RealNodes
	if spec == nil || (spec.Ray && cluster == hubClusterName) {
		return nil, nil
	}
	if i > 200 {
		return nil, fmt.Errorf("real Nodes: %d clusters is more than the 10.200.x.0/24 ranges hold", i+1)
	}
	ns, err := localcluster.CreateNetNS(NetNSPrefix(os.Getpid())+cluster, realNodeAddr(i))
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.closers = append(f.closers, ns)
	f.nodeNS[cluster] = ns
	f.mu.Unlock()
	node := &localcluster.RealNode{NetNS: ns, Images: spec.Images, SandboxImage: spec.SandboxImage, Runc: spec.Runc}
	if !spec.Ray {
		node.Taints = []corev1.Taint{{Key: localcluster.RealNodeTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	}
	return node, nil
}

// dialServe connects to the serve Service svc's port inside member's Node namespace, at its
// ClusterIP, where kube-proxy takes it to the Serve proxy: the load balancer stand-ins'
// loadbalancer.Options.Backend with RealNodes.Ray.
func (f *Fleet) dialServe(member string) func(context.Context, *corev1.Service, int32) (net.Conn, error) {
	return func(ctx context.Context, svc *corev1.Service, port int32) (net.Conn, error) {
		f.mu.Lock()
		ns := f.nodeNS[member]
		f.mu.Unlock()
		if ns == nil {
			return nil, fmt.Errorf("member %s has no real Node", member)
		}
		ip := svc.Spec.ClusterIP
		if ip == "" || ip == corev1.ClusterIPNone {
			return nil, fmt.Errorf("serve Service %s/%s of %s has no ClusterIP", svc.Namespace, svc.Name, member)
		}
		return localcluster.DialInNetNS(ctx, ns.Path, net.JoinHostPort(ip, strconv.Itoa(int(port))))
	}
}

// startNodeProxy starts a NodeProxy into member's Node, stopped with the fleet, and returns
// its URL.
func (f *Fleet) startNodeProxy(member *localcluster.Cluster) (string, error) {
	p, err := member.StartNodeProxy()
	if err != nil {
		return "", fmt.Errorf("node proxy of %s: %w", member.Name, err)
	}
	f.mu.Lock()
	f.closers = append(f.closers, closerFunc(p.Stop))
	f.mu.Unlock()
	return p.URL, nil
}

// closerFunc is a func() as an io.Closer.
type closerFunc func()

// Close calls the func.
func (c closerFunc) Close() error {
	c()
	return nil
}
