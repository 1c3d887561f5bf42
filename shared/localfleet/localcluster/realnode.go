package localcluster

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RealNode describes the one real Node a cluster gets: a kubelet on containerd and runc, Pods
// on a CNI bridge, and kube-proxy, all in the network namespace NetNS. The control plane stays
// on 127.0.0.1 and is forwarded into the namespace at Addr, which it advertises.
type RealNode struct {
	// NetNS is the namespace the Node runs in (see CreateNetNS).
	NetNS *NetNS
	// Name is the Node's name; default "<cluster>-node".
	Name string
	// Images are image tarballs (OCI or Docker archives) imported into containerd before the
	// kubelet starts, since the Node pulls from no registry.
	Images []string
	// SandboxImage is the pause image Pods' sandboxes run; it must be among Images.
	SandboxImage string
	// Runc is the runc binary; default the one on PATH.
	Runc string
	// PodCIDR is the bridge's Pod range; default 10.244.0.0/24.
	PodCIDR netip.Prefix
	// StartTimeout bounds the wait for the Node to be Ready; default startTimeout.
	StartTimeout time.Duration
	// Taints are registered with the Node, e.g. to keep Pods meant for kwok's Nodes off it.
	Taints []corev1.Taint
}

// RealNodeTaintKey is the taint a local fleet puts on its real Nodes (NoSchedule), so that
// Pods without a toleration, such as the Ray Pods kwok plays, stay on the fake Nodes.
const RealNodeTaintKey = "localfleet.rayfleet.io/real-node"

// Node tool names, as e2e/tools/build.sh links them into the bin directory; CNI plugins are
// the directory cni-plugins.
var nodeTools = []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "cni-plugins"}

// MissingNodeTools lists the node tools absent from binDir (empty: all there).
func MissingNodeTools(binDir string) []string {
	var missing []string
	for _, t := range nodeTools {
		if _, err := os.Stat(filepath.Join(binDir, t)); err != nil {
			missing = append(missing, t)
		}
	}
	return missing
}

// ArchiveImageName is the first tag in an image archive's manifest.json (Docker's layout,
// which make image writes), e.g. to name a RealNode's SandboxImage.
func ArchiveImageName(archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s has no manifest.json", archive)
		}
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", archive, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var manifest []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
			return "", fmt.Errorf("decoding %s's manifest.json: %w", archive, err)
		}
		if len(manifest) == 0 || len(manifest[0].RepoTags) == 0 {
			return "", fmt.Errorf("%s names no image", archive)
		}
		return strings.TrimSpace(manifest[0].RepoTags[0]), nil
	}
}

// apiServerIPs are the addresses the serving certificate needs besides loopback.
func (n *RealNode) apiServerIPs() []net.IP {
	if n == nil || n.NetNS == nil {
		return nil
	}
	return []net.IP{net.IP(n.NetNS.Addr.AsSlice())}
}

// advertiseAddress is what the kubernetes Service's endpoints point at: the namespace's
// address with a real Node, since Pods cannot reach the host's loopback.
func (n *RealNode) advertiseAddress() string {
	if n == nil || n.NetNS == nil {
		return "127.0.0.1"
	}
	return n.NetNS.Addr.String()
}

// realNode is a running real Node.
type realNode struct {
	spec       RealNode
	dir        string
	containerd *Process
	kubelet    *Process
	kubeProxy  *Process
	procs      []*Process
	fwd        *forwarder
	socket     string
	ctrBin     string
}

func (c *Cluster) startRealNode(ctx context.Context) error {
	spec := c.opts.RealNode
	if spec == nil {
		return nil
	}
	n := &realNode{spec: withNodeDefaults(*spec, c.Name), dir: filepath.Join(c.Dir, "node")}
	if err := n.spec.validate(); err != nil {
		return fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	c.mu.Lock()
	c.node = n
	c.mu.Unlock()
	hostURL, err := url.Parse(c.host)
	if err != nil {
		return fmt.Errorf("parsing API server URL %s: %w", c.host, err)
	}
	nsAddr := net.JoinHostPort(n.spec.NetNS.Addr.String(), hostURL.Port())
	if n.fwd, err = startForwarder(n.spec.NetNS.Path, nsAddr, hostURL.Host); err != nil {
		return err
	}
	paths := n.paths()
	for _, d := range []string{paths.cniConf, paths.cniIPAM, paths.podLogs, paths.kubeletRoot} {
		if err = os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", d, err)
		}
	}
	files := map[string]string{
		filepath.Join(paths.cniConf, "10-rayfleet.conflist"): cniConfig(n.spec.PodCIDR, paths.cniIPAM),
		paths.containerdConfig:                               containerdConfig(paths, c.bin("cni-plugins"), n.spec.SandboxImage, n.spec.Runc),
		paths.kubeletConfig:                                  kubeletConfig(paths, c.files.CACert, n.spec.NetNS.Addr, n.cgroupRoot(), n.spec.Taints),
		paths.kubeProxyConfig:                                kubeProxyConfig(paths.kubeProxyKubeconfig, n.spec.Name),
	}
	for path, data := range files {
		if err = os.WriteFile(path, []byte(data), 0o600); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	server := "https://" + nsAddr
	if err = c.writeKubeconfigFor(paths.kubeletKubeconfig, server, "system:node:"+n.spec.Name, "system:nodes"); err != nil {
		return err
	}
	if err = c.writeKubeconfigFor(paths.kubeProxyKubeconfig, server, "system:kube-proxy"); err != nil {
		return err
	}
	if err = createCgroupRoot(n.cgroupRoot()); err != nil {
		return err
	}
	if err = c.startContainerd(ctx, n); err != nil {
		return err
	}
	if n.kubelet, err = c.startInNode(n, "kubelet", c.bin("kubelet"), "--config="+paths.kubeletConfig,
		"--kubeconfig="+paths.kubeletKubeconfig, "--hostname-override="+n.spec.Name,
		"--node-ip="+n.spec.NetNS.Addr.String(), "--root-dir="+paths.kubeletRoot,
		"--cert-dir="+filepath.Join(paths.kubeletRoot, "pki")); err != nil {
		return err
	}
	if n.kubeProxy, err = c.startInNode(n, "kube-proxy", c.bin("kube-proxy"), "--config="+paths.kubeProxyConfig); err != nil {
		return err
	}
	return c.waitNodeReady(ctx, n)
}

// validate rejects a RealNode the Node could not start from, before anything is started.
func (n RealNode) validate() error {
	switch {
	case n.NetNS == nil:
		return errors.New("RealNode needs a NetNS (CreateNetNS)")
	case n.SandboxImage == "":
		return errors.New("RealNode needs a SandboxImage: the Node pulls from no registry")
	case n.Runc == "":
		return errors.New("RealNode found no runc on PATH (Debian's runc package)")
	}
	// kube-proxy runs in iptables mode, which drives the iptables command.
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("kube-proxy needs iptables (Debian's iptables package): %w", err)
	}
	return nil
}

// cgroupRoot is the Node's own cgroup (see createCgroupRoot).
func (n *realNode) cgroupRoot() string { return "rayfleet-" + n.spec.Name }

func withNodeDefaults(n RealNode, cluster string) RealNode {
	if n.Name == "" {
		n.Name = cluster + "-node"
	}
	if n.Runc == "" {
		if p, err := exec.LookPath("runc"); err == nil {
			n.Runc = p
		}
	}
	if !n.PodCIDR.IsValid() {
		n.PodCIDR = netip.MustParsePrefix("10.244.0.0/24")
	}
	if n.StartTimeout == 0 {
		n.StartTimeout = startTimeout
	}
	return n
}

// startInNode starts a node component inside the namespace. PATH leads with the bin directory,
// where containerd finds its shim.
func (c *Cluster) startInNode(n *realNode, name, bin string, args ...string) (*Process, error) {
	p, err := c.startIn(n.spec.NetNS.Path, name, bin, args,
		[]string{"PATH=" + c.opts.BinDir + ":" + os.Getenv("PATH")})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	n.procs = append(n.procs, p)
	c.mu.Unlock()
	return p, nil
}

func (c *Cluster) startContainerd(ctx context.Context, n *realNode) error {
	paths := n.paths()
	var err error
	if n.containerd, err = c.startInNode(n, "containerd", c.bin("containerd"), "--config="+paths.containerdConfig); err != nil {
		return err
	}
	n.socket, n.ctrBin = paths.containerdSocket, c.bin("ctr")
	err = wait.PollUntilContextTimeout(ctx, pollInterval, startTimeout, true, func(context.Context) (bool, error) {
		if exited, exitErr := n.containerd.Exited(); exited {
			return false, fmt.Errorf("containerd exited: %v", exitErr)
		}
		return n.ctr("version") == nil, nil
	})
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	for _, img := range n.spec.Images {
		if err := n.ctr("images", "import", "--no-unpack=false", img); err != nil {
			return err
		}
	}
	return nil
}

// ctr runs ctr against the Node's containerd in the namespace the CRI uses.
func (n *realNode) ctr(args ...string) error {
	cmd := exec.Command(n.ctrBin, append([]string{"--address=" + n.socket, "--namespace=k8s.io"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// ctrOutput is ctr's standard output.
func (n *realNode) ctrOutput(args ...string) (string, error) {
	out, err := exec.Command(n.ctrBin, append([]string{"--address=" + n.socket, "--namespace=k8s.io"}, args...)...).Output()
	return string(out), err
}

func (c *Cluster) waitNodeReady(ctx context.Context, n *realNode) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, pollInterval, n.spec.StartTimeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range n.procs {
			if exited, exitErr := p.Exited(); exited {
				return false, fmt.Errorf("%s exited: %v", p.Name, exitErr)
			}
		}
		var node corev1.Node
		if err := c.Client.Get(ctx, client.ObjectKey{Name: n.spec.Name}, &node); err != nil {
			last = err.Error()
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				last = fmt.Sprintf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		last = "no Ready condition yet"
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s: %w (last: %s)", n.spec.Name, err, last)
	}
	return nil
}

// RealNodeProcesses returns the real Node's kubelet, containerd and kube-proxy (nil without a
// real Node), e.g. to read their resource usage.
func (c *Cluster) RealNodeProcesses() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.node == nil {
		return nil
	}
	return slices.Clone(c.node.procs)
}

// ContainerPID is the host pid of a running container's main process, from the id in a Pod's
// containerStatuses (with or without the containerd:// prefix).
func (c *Cluster) ContainerPID(id string) (int, error) {
	c.mu.Lock()
	n := c.node
	c.mu.Unlock()
	if n == nil {
		return 0, fmt.Errorf("cluster %s has no real Node", c.Name)
	}
	id = strings.TrimPrefix(id, "containerd://")
	out, err := n.ctrOutput("tasks", "ls")
	if err != nil {
		return 0, fmt.Errorf("ctr tasks ls: %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == id {
			return strconv.Atoi(f[1])
		}
	}
	return 0, fmt.Errorf("no task %s in containerd", id)
}

// stopRealNode stops the kubelet and kube-proxy, kills the containers they leave behind (a
// kubelet leaves its Pods running when it stops), stops containerd, unmounts what the Node
// mounted under the state directory and closes the forwarder.
func (c *Cluster) stopRealNode() {
	c.mu.Lock()
	n := c.node
	c.mu.Unlock()
	if n == nil {
		return
	}
	var others []*Process
	for _, p := range n.procs {
		if p != n.containerd {
			others = append(others, p)
		}
	}
	stopAll(others)
	if n.containerd != nil {
		if exited, _ := n.containerd.Exited(); !exited {
			n.removeContainers()
		}
		n.containerd.Stop()
	}
	unmountUnder(n.dir)
	removeCgroupRoot(n.cgroupRoot())
	if n.fwd != nil {
		n.fwd.stop()
	}
}

// removeContainers kills and deletes every task and container in the CRI's namespace, and the
// network namespaces of the Pod sandboxes, so that no shim, container or Pod network outlives
// the cluster.
func (n *realNode) removeContainers() {
	ids := func(args ...string) []string {
		out, err := n.ctrOutput(args...)
		if err != nil {
			return nil
		}
		return strings.Fields(out)
	}
	for _, id := range ids("tasks", "ls", "--quiet") {
		// --force kills a running task first and waits for it.
		_ = n.ctr("tasks", "delete", "--force", id)
	}
	var netns []string
	for _, id := range ids("containers", "ls", "--quiet") {
		if info, err := n.ctrOutput("containers", "info", id); err == nil {
			netns = append(netns, sandboxNetNS(info)...)
		}
		_ = n.ctr("containers", "delete", id)
	}
	for _, path := range netns {
		_ = exec.Command("ip", "netns", "delete", filepath.Base(path)).Run()
	}
}

// sandboxNetNS returns the named network namespaces (under /run/netns) a container's spec
// joins: the CRI creates one per Pod sandbox and, once the kubelet is gone, nobody removes it.
func sandboxNetNS(containerInfo string) []string {
	var info struct {
		Spec struct {
			Linux struct {
				Namespaces []struct{ Type, Path string }
			}
		}
	}
	if err := json.Unmarshal([]byte(containerInfo), &info); err != nil {
		return nil
	}
	var out []string
	for _, ns := range info.Spec.Linux.Namespaces {
		dir := filepath.Dir(ns.Path)
		if ns.Type == "network" && (dir == "/run/netns" || dir == "/var/run/netns") {
			out = append(out, ns.Path)
		}
	}
	return out
}

// unmountUnder lazily unmounts every mount point under dir, deepest first, so that removing
// the state directory does not trip over the kubelet's volumes or containerd's rootfs mounts.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			points = append(points, f[4])
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		_ = exec.Command("umount", "-l", p).Run()
	}
}
