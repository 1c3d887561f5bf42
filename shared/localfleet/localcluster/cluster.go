// Package localcluster starts and stops a real Kubernetes control plane on loopback for e2e tests
// and benchmarks: etcd, kube-apiserver, optionally kube-scheduler and kube-controller-manager, and
// kwok to play the kubelet on fake Nodes. Everything runs as child processes of the caller, keeps
// its state in one directory and listens on 127.0.0.1 only; the opt-in RealNode adds a kubelet,
// containerd and kube-proxy that listen only inside the network namespace they run in.
// It is the local fleet's, for cmd/rayfleet and e2e/; hub/ and spoke/ production code never
// imports it, and it imports no hub/, spoke/ or cmd/ package, nor shared/testing.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// startTimeout bounds how long each control-plane component may take to become ready; the
// apiserver needs ~5 s on an idle machine and several times that on a busy 2-core one.
const startTimeout = 2 * time.Minute

// Options say what to start. The zero value starts etcd and kube-apiserver only.
type Options struct {
	// Name names the cluster in the kubeconfig; default "member".
	Name string
	// BinDir holds etcd, kube-apiserver, kube-scheduler, kube-controller-manager, kwok and
	// kwok-stages.yaml; default DefaultBinDir().
	BinDir string
	// StateDir is where state and logs go; default a fresh temporary directory.
	StateDir string
	// KeepState leaves StateDir on disk after Stop (for post-mortems).
	KeepState bool
	// Scheduler starts kube-scheduler.
	Scheduler bool
	// ControllerManager starts kube-controller-manager (Jobs, garbage collection, default
	// ServiceAccounts and their tokens).
	ControllerManager bool
	// Nodes are fake Nodes run by kwok; none means kwok is not started.
	Nodes []NodeSpec
	// CRDDirs are directories of CustomResourceDefinition YAML installed before Start returns.
	CRDDirs []string
	// AuditPolicy, when set, is an audit.k8s.io/v1 Policy (YAML); the audit log is JSON lines
	// at Cluster.AuditLogPath.
	AuditPolicy string
	// ClientQPS and ClientBurst tune the returned rest.Config and the helper components;
	// defaults 500 and 1000 so that the control plane is never what a benchmark measures.
	ClientQPS   float32
	ClientBurst int
	// APIServerPort is the kube-apiserver's port on 127.0.0.1; 0 picks a free one. A fixed
	// port keeps a kubeconfig valid across restarts (rayfleet dev); the caller checks that it
	// is free.
	APIServerPort int
	// LogDir, when set, receives every component's log as <LogDir>/<Name>-<component>.log
	// (shared by several clusters, so the name is prefixed); default the state directory, as
	// <StateDir>/<component>.log.
	LogDir string
	// RealNode, when set, adds one real Node (kubelet, containerd, runc, CNI bridge,
	// kube-proxy) running in a network namespace, with the API server advertised there.
	RealNode *RealNode
	// OnStart, when set, is called with every process right after it started (the control
	// plane's and those of StartProcess and StartManager), e.g. to record its pid.
	OnStart func(*Process)
}

// Cluster is a running control plane.
type Cluster struct {
	// Name is the cluster's name in its kubeconfigs.
	Name string
	// Dir holds state, kubeconfigs and logs.
	Dir string
	// Kubeconfig is the path of an admin (system:masters) kubeconfig.
	Kubeconfig string
	// Config is an admin rest.Config.
	Config *rest.Config
	// Client is an admin controller-runtime client with the scheme of this package.
	Client client.Client

	opts     Options
	host     string
	pki      *pki
	files    pkiFiles
	mu       sync.Mutex
	etcd     *Process
	api      *Process
	apiArgs  []string   // the API server's arguments, for StartAPIServer
	system   []*Process // scheduler, KCM, kwok: stopped before the apiserver
	user     []*Process // started with StartProcess: stopped first
	node     *realNode  // the real Node, torn down before everything else
	stopOnce sync.Once
}

// DefaultBinDir is $RAYFLEET_K8S_BIN, or bin/k8s in the repository.
func DefaultBinDir() string {
	if d := os.Getenv("RAYFLEET_K8S_BIN"); d != "" {
		return d
	}
	root, err := RepoRoot()
	if err != nil {
		return filepath.Join("bin", "k8s")
	}
	return filepath.Join(root, "bin", "k8s")
}

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding the repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// Start brings the control plane up and returns once the API server answers, the CRDs are
// established and every fake Node is Ready. On error everything started so far is stopped.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	opts = withDefaults(opts)
	c = &Cluster{Name: opts.Name, opts: opts}
	if c.Dir, err = StateDir(opts.StateDir, "rayfleet-e2e-"); err != nil {
		return nil, err
	}
	if opts.LogDir != "" {
		if err = os.MkdirAll(opts.LogDir, 0o700); err != nil {
			return nil, fmt.Errorf("creating log dir %s: %w", opts.LogDir, err)
		}
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.logTails(40))
			c.Stop()
		}
	}()
	if c.pki, err = newPKI(c.opts.RealNode.apiServerIPs()...); err != nil {
		return c, err
	}
	if c.files, err = c.pki.write(filepath.Join(c.Dir, "pki")); err != nil {
		return c, err
	}
	if err = c.startEtcdAndAPIServer(ctx); err != nil {
		return c, err
	}
	if err = c.installCRDs(ctx); err != nil {
		return c, err
	}
	if err = c.startSystemComponents(); err != nil {
		return c, err
	}
	if err = c.createNodes(ctx); err != nil {
		return c, err
	}
	if err = c.startRealNode(ctx); err != nil {
		return c, err
	}
	return c, nil
}

func withDefaults(o Options) Options {
	if o.Name == "" {
		o.Name = "member"
	}
	if o.BinDir == "" {
		o.BinDir = DefaultBinDir()
	}
	if o.ClientQPS == 0 {
		o.ClientQPS = 500
	}
	if o.ClientBurst == 0 {
		o.ClientBurst = 1000
	}
	return o
}

// StateDir creates dir (mode 0700) and returns it, or, when dir is empty, a fresh temporary
// directory whose name starts with prefix.
func StateDir(dir, prefix string) (string, error) {
	if dir == "" {
		d, err := os.MkdirTemp("", prefix)
		if err != nil {
			return "", fmt.Errorf("creating state dir: %w", err)
		}
		return d, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating state dir %s: %w", dir, err)
	}
	return dir, nil
}

// bin is the path of a control-plane binary.
func (c *Cluster) bin(name string) string { return filepath.Join(c.opts.BinDir, name) }

// logPath is where the component name logs: see Options.LogDir.
func (c *Cluster) logPath(name string) string {
	if c.opts.LogDir != "" {
		return filepath.Join(c.opts.LogDir, c.Name+"-"+name+".log")
	}
	return filepath.Join(c.Dir, name+".log")
}

// start starts one of the cluster's processes and tells Options.OnStart about it.
func (c *Cluster) start(name, bin string, args, env []string) (*Process, error) {
	return c.startIn("", name, bin, args, env)
}

// startIn is start inside the network namespace at nsPath ("" for this process's). nsenter
// execs the program, so the pid (and SIGTERM) are the program's, and so is Process.Bin.
func (c *Cluster) startIn(nsPath, name, bin string, args, env []string) (*Process, error) {
	exe := bin
	if nsPath != "" {
		exe, args = "nsenter", append([]string{"--net=" + nsPath, "--", bin}, args...)
	}
	p, err := startProcessLogging(c.logPath(name), name, exe, args, env)
	if err != nil {
		return nil, err
	}
	p.Bin = bin
	if c.opts.OnStart != nil {
		c.opts.OnStart(p)
	}
	return p, nil
}

// StartProcess runs a program against the cluster (typically bin/spoke), with its output in
// <Dir>/<name>.log (or under Options.LogDir). It is stopped by Stop before the control plane
// goes down.
func (c *Cluster) StartProcess(name, bin string, args, env []string) (*Process, error) {
	return c.StartProcessIn(nil, name, bin, args, env)
}

// StartProcessIn is StartProcess inside the network namespace ns (nil for this process's).
func (c *Cluster) StartProcessIn(ns *NetNS, name, bin string, args, env []string) (*Process, error) {
	nsPath := ""
	if ns != nil {
		nsPath = ns.Path
	}
	p, err := c.startIn(nsPath, name, bin, args, env)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.user = append(c.user, p)
	c.mu.Unlock()
	return p, nil
}

// Stop stops user processes, then kwok, the KCM and the scheduler, then the API server and
// etcd last (an apiserver whose etcd is gone hangs for half a minute retrying it), and removes
// the state directory unless KeepState is set.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.stopRealNode()
		c.mu.Lock()
		procs := slices.Concat(c.user, c.system)
		api := c.api
		c.mu.Unlock()
		stopAll(procs)
		for _, p := range []*Process{api, c.etcd} {
			if p != nil {
				p.Stop()
			}
		}
		if !c.opts.KeepState && c.Dir != "" {
			_ = os.RemoveAll(c.Dir)
		}
	})
}

// stopAll stops processes concurrently: they do not depend on each other.
func stopAll(procs []*Process) {
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Go(p.Stop)
	}
	wg.Wait()
}

// DumpLogs writes the last lines of every component's log to w.
func (c *Cluster) DumpLogs(w io.Writer, lines int) {
	_, _ = io.WriteString(w, c.logTails(lines))
}

func (c *Cluster) logTails(lines int) string {
	c.mu.Lock()
	procs := slices.Concat([]*Process{c.etcd, c.api}, c.system, c.user)
	if c.node != nil {
		procs = append(procs, c.node.procs...)
	}
	c.mu.Unlock()
	out := ""
	for _, p := range procs {
		if p == nil {
			continue
		}
		out += fmt.Sprintf("===== %s (%s), last %d lines =====\n%s\n", p.Name, p.LogPath, lines, tail(p.LogPath, lines))
	}
	return out
}

// Components returns the control-plane processes (etcd, kube-apiserver, then the optional
// scheduler, KCM and kwok), e.g. to read their resource usage.
func (c *Cluster) Components() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.DeleteFunc(slices.Concat([]*Process{c.etcd, c.api}, c.system), func(p *Process) bool { return p == nil })
}

// AuditLogPath is where the API server writes audit events when Options.AuditPolicy is set.
func (c *Cluster) AuditLogPath() string { return filepath.Join(c.Dir, "audit.log") }

// Host is the API server's URL.
func (c *Cluster) Host() string { return c.host }
