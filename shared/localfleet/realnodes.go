package localfleet

import (
	"fmt"
	"net/netip"
	"os"

	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// RealNodes gives the hub and every member one real Node each (localcluster.RealNode), in a
// network namespace of its own. The Nodes carry the taint localcluster.RealNodeTaintKey, so
// the Ray Pods, which tolerate nothing, stay on kwok's Nodes; bin/hub and bin/spoke still run
// on the host. Root only.
type RealNodes struct {
	// Images are the image tarballs every Node imports (make image's rayfleet.tar and
	// pause.tar).
	Images []string
	// SandboxImage is the pause image's name; it must be among Images.
	SandboxImage string
	// Runc is the runc binary; default the one on PATH.
	Runc string
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
	if spec == nil {
		return nil, nil
	}
	if i > 200 {
		return nil, fmt.Errorf("real Nodes: %d clusters is more than the 10.200.x.0/24 ranges hold", i+1)
	}
	ns, err := localcluster.CreateNetNS(fmt.Sprintf("rf-fleet-%d-%s", os.Getpid(), cluster), realNodeAddr(i))
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.closers = append(f.closers, ns)
	f.mu.Unlock()
	return &localcluster.RealNode{
		NetNS: ns, Images: spec.Images, SandboxImage: spec.SandboxImage, Runc: spec.Runc,
		Taints: []corev1.Taint{{Key: localcluster.RealNodeTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
	}, nil
}
