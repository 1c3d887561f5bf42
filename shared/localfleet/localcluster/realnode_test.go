//go:build e2e

package localcluster

import (
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

func TestSandboxNetNS(t *testing.T) {
	tests := []struct {
		name, info string
		want       []string
	}{
		{
			name: "sandbox joins a CRI namespace",
			info: `{"Spec":{"linux":{"namespaces":[{"type":"pid"},{"type":"network","path":"/var/run/netns/cni-1"}]}}}`,
			want: []string{"/var/run/netns/cni-1"},
		},
		{
			name: "container joins its sandbox's process",
			info: `{"Spec":{"linux":{"namespaces":[{"type":"network","path":"/proc/42/ns/net"}]}}}`,
		},
		{name: "not JSON", info: "ctr: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sandboxNetNS(tt.info); !slices.Equal(got, tt.want) {
				t.Errorf("sandboxNetNS = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestRealNodeValidate(t *testing.T) {
	ns := &NetNS{Name: "x", Path: "/run/netns/x", Addr: netip.MustParseAddr("10.200.0.1")}
	tests := []struct {
		name    string
		node    RealNode
		wantErr string
	}{
		{name: "no namespace", node: RealNode{SandboxImage: "p", Runc: "/usr/sbin/runc"}, wantErr: "NetNS"},
		{name: "no sandbox image", node: RealNode{NetNS: ns, Runc: "/usr/sbin/runc"}, wantErr: "SandboxImage"},
		{name: "no runc", node: RealNode{NetNS: ns, SandboxImage: "p"}, wantErr: "runc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.node.validate()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("validate() = %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
}

// The kubelet refuses cgroup v1 and cgroupfs is the only driver without systemd; both must
// survive any edit of the template.
func TestKubeletConfigAllowsCgroupV1(t *testing.T) {
	n := &realNode{dir: "/state/node"}
	cfg := kubeletConfig(n.paths(), "/state/pki/ca.crt", netip.MustParseAddr("10.200.0.1"), "rayfleet-n", nil)
	for _, want := range []string{"failCgroupV1: false", "cgroupDriver: cgroupfs", "cgroupRoot: /rayfleet-n", "unix:///state/node/containerd/containerd.sock", "address: 10.200.0.1"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("kubelet config lacks %q:\n%s", want, cfg)
		}
	}
}

// The Node registers with the taints asked for, in the form the kubelet's configuration reads.
func TestKubeletConfigRegistersTaints(t *testing.T) {
	n := &realNode{dir: "/state/node"}
	want := []corev1.Taint{{Key: RealNodeTaintKey, Value: "true", Effect: corev1.TaintEffectNoSchedule}}
	cfg := kubeletConfig(n.paths(), "/state/pki/ca.crt", netip.MustParseAddr("10.200.0.1"), "rayfleet-n", want)
	var got struct {
		RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
		MaxPods            int            `json:"maxPods"`
	}
	if err := yaml.Unmarshal([]byte(cfg), &got); err != nil {
		t.Fatalf("kubelet config does not parse: %v\n%s", err, cfg)
	}
	if !reflect.DeepEqual(got.RegisterWithTaints, want) || got.MaxPods != 32 {
		t.Errorf("registerWithTaints = %+v, maxPods %d; want %+v, 32:\n%s", got.RegisterWithTaints, got.MaxPods, want, cfg)
	}
}
