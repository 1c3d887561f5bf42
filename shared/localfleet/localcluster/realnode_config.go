package localcluster

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// nodePaths are where a real Node keeps its configuration and state, all under the cluster's
// state directory so that two clusters' Nodes never share a file or socket.
type nodePaths struct {
	containerdConfig, containerdRoot, containerdState, containerdSocket string
	cniConf, cniIPAM                                                    string
	kubeletConfig, kubeletKubeconfig, kubeletRoot, podLogs              string
	kubeProxyConfig, kubeProxyKubeconfig                                string
}

func (n *realNode) paths() nodePaths {
	d := n.dir
	return nodePaths{
		containerdConfig:    filepath.Join(d, "containerd.toml"),
		containerdRoot:      filepath.Join(d, "containerd", "root"),
		containerdState:     filepath.Join(d, "containerd", "state"),
		containerdSocket:    filepath.Join(d, "containerd", "containerd.sock"),
		cniConf:             filepath.Join(d, "cni", "net.d"),
		cniIPAM:             filepath.Join(d, "cni", "ipam"),
		kubeletConfig:       filepath.Join(d, "kubelet.yaml"),
		kubeletKubeconfig:   filepath.Join(d, "kubelet.kubeconfig"),
		kubeletRoot:         filepath.Join(d, "kubelet"),
		podLogs:             filepath.Join(d, "pod-logs"),
		kubeProxyConfig:     filepath.Join(d, "kube-proxy.yaml"),
		kubeProxyKubeconfig: filepath.Join(d, "kube-proxy.kubeconfig"),
	}
}

// containerdConfig renders containerd 2.x's configuration (version 3): private root, state,
// sockets and runc state; no NRI (its socket is host-wide); runc from the distribution through
// the v2 shim with cgroupfs; OOM scores clamped to containerd's own (without CAP_SYS_RESOURCE,
// as in a container, runc cannot lower a sandbox's to -998); the CNI plugins make node-tools
// builds; and the sandbox image imported from a tarball rather than pulled.
func containerdConfig(p nodePaths, cniBin, sandboxImage, runc string) string {
	return fmt.Sprintf(`version = 3
root = %[1]q
state = %[2]q

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[plugins.'io.containerd.internal.v1.opt']
  path = %[5]q

[plugins.'io.containerd.nri.v1.nri']
  disable = true

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = %[6]q

[plugins.'io.containerd.cri.v1.runtime']
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[7]q
        Root = %[10]q
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = [%[8]q]
    conf_dir = %[9]q
`, p.containerdRoot, p.containerdState, p.containerdSocket, p.containerdSocket+".ttrpc",
		filepath.Join(p.containerdRoot, "opt"), sandboxImage, runc, cniBin, p.cniConf,
		filepath.Join(p.containerdState, "runc"))
}

// cniConfig is a bridge network for the Pods: the bridge is their gateway and masquerades
// what leaves the Pod range; host-local keeps its leases under the state directory.
func cniConfig(podCIDR netip.Prefix, ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "rayfleet",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
`, ipamDir, podCIDR.String())
}

// kubeletConfig is the kubelet's configuration for this machine: cgroup v1 allowed, cgroupfs
// (no systemd here) under the Node's own cgroup root, no swap accounting, client certificates checked against the cluster CA,
// and eviction thresholds low enough that a shared, busy disk does not evict the test's Pods.
func kubeletConfig(p nodePaths, caFile string, addr netip.Addr, cgroupRoot string, taints []corev1.Taint) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /%[5]s
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: false
  x509:
    clientCAFile: %[3]q
authorization:
  mode: AlwaysAllow
failSwapOn: false
memorySwap:
  swapBehavior: NoSwap
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: %[4]q
evictionHard:
  memory.available: 50Mi
  nodefs.available: 1%%
  nodefs.inodesFree: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 32
`, p.containerdSocket, addr, caFile, p.podLogs, cgroupRoot) + registerWithTaints(taints)
}

// registerWithTaints is the kubelet configuration's taints field; JSON strings are YAML.
func registerWithTaints(taints []corev1.Taint) string {
	if len(taints) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("registerWithTaints:\n")
	for _, t := range taints {
		fmt.Fprintf(&b, "  - key: %q\n    value: %q\n    effect: %q\n", t.Key, t.Value, t.Effect)
	}
	return b.String()
}

// kubeProxyConfig runs kube-proxy in iptables mode without touching host-wide conntrack
// sysctls (a zero value leaves each alone).
func kubeProxyConfig(kubeconfig, nodeName string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %q
hostnameOverride: %q
mode: iptables
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, nodeName)
}
