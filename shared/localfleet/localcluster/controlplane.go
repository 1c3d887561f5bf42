package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pollInterval is how often start-up waits look again; start-up takes seconds.
const pollInterval = 100 * time.Millisecond

// AdminUser is the user of the admin kubeconfig; it is in system:masters.
const AdminUser = "rayfleet-e2e-admin"

// MastersGroup is the group RBAC lets do anything.
const MastersGroup = "system:masters"

func (c *Cluster) startEtcdAndAPIServer(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	if c.opts.APIServerPort != 0 {
		apiPort = c.opts.APIServerPort
	}
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", etcdClient)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPeer)
	c.etcd, err = c.start(etcdName, c.bin("etcd"), []string{
		"--name=" + c.Name, "--data-dir=" + filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls=" + clientURL, "--advertise-client-urls=" + clientURL,
		"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=" + c.Name + "=" + peerURL,
		// Test data is disposable; fsync is what makes etcd slow on shared disks.
		"--unsafe-no-fsync", "--log-level=warn",
	}, nil)
	if err != nil {
		return err
	}
	if err = waitHTTP(ctx, c.etcd, http.DefaultClient, clientURL+"/health"); err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	if err = c.startAPIServer(clientURL, apiPort); err != nil {
		return err
	}
	c.host = fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	if c.Kubeconfig, c.Config, err = c.writeKubeconfig("kubeconfig", AdminUser, MastersGroup); err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return fmt.Errorf("building API server client: %w", err)
	}
	if err = waitHTTP(ctx, c.api, httpClient, c.host+"/readyz"); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	if c.Client, err = client.New(c.Config, client.Options{Scheme: Scheme}); err != nil {
		return fmt.Errorf("building admin client: %w", err)
	}
	return nil
}

func (c *Cluster) startAPIServer(etcdURL string, port int) error {
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=" + c.opts.RealNode.advertiseAddress(), "--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + c.files.ServingCert, "--tls-private-key-file=" + c.files.ServingKey,
		"--client-ca-file=" + c.files.CACert,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.files.SAPub,
		"--service-account-signing-key-file=" + c.files.SAKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		// The Node authorizer is what lets a real kubelet read its Pods' Secrets and ConfigMaps.
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		// Benchmarks create hundreds of objects at once; the default in-flight limits would
		// make the apiserver, not the controller under test, the bottleneck.
		"--max-requests-inflight=2000", "--max-mutating-requests-inflight=1000",
	}
	if c.opts.AuditPolicy != "" {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(c.opts.AuditPolicy), 0o600); err != nil {
			return fmt.Errorf("writing audit policy: %w", err)
		}
		args = append(args, "--audit-policy-file="+policy, "--audit-log-path="+c.AuditLogPath(),
			"--audit-log-format=json", "--audit-log-mode=blocking")
	}
	api, err := c.start(apiServerName, c.bin("kube-apiserver"), args, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.api, c.apiArgs = api, args
	c.mu.Unlock()
	return nil
}

// apiServerName names the API server's process (and its log file).
const apiServerName = "kube-apiserver"

// StopAPIServer stops the kube-apiserver alone: etcd and every other process keep running, so
// that its clients see an outage of the API server, which StartAPIServer ends.
func (c *Cluster) StopAPIServer() {
	c.mu.Lock()
	api := c.api
	c.mu.Unlock()
	if api != nil {
		api.Stop()
	}
}

// StartAPIServer starts the kube-apiserver StopAPIServer stopped again, with the arguments it
// first started with (the same port, etcd, certificates and audit log, so that every
// kubeconfig of the cluster stays valid), and waits until it is ready. Its log is appended to
// the same file.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	old, args := c.api, c.apiArgs
	c.mu.Unlock()
	if old == nil || args == nil {
		return fmt.Errorf("cluster %s: the API server was never started", c.Name)
	}
	if exited, _ := old.Exited(); !exited {
		return fmt.Errorf("cluster %s: the API server (pid %d) still runs", c.Name, old.PID())
	}
	api, err := c.start(apiServerName, c.bin("kube-apiserver"), args, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.api = api
	c.mu.Unlock()
	httpClient, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return fmt.Errorf("building API server client: %w", err)
	}
	if err := waitHTTP(ctx, api, httpClient, c.host+"/readyz"); err != nil {
		return fmt.Errorf("kube-apiserver of %s restarted: %w\n%s", c.Name, err, tail(api.LogPath, 40))
	}
	return nil
}

// startSystemComponents starts the optional scheduler, KCM and kwok.
func (c *Cluster) startSystemComponents() error {
	type component struct {
		enabled bool
		start   func() (*Process, error)
	}
	for _, comp := range []component{
		{c.opts.Scheduler, c.startScheduler},
		{c.opts.ControllerManager, c.startControllerManager},
		{len(c.opts.Nodes) > 0, c.startKwok},
	} {
		if !comp.enabled {
			continue
		}
		p, err := comp.start()
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.system = append(c.system, p)
		c.mu.Unlock()
	}
	return nil
}

func (c *Cluster) startScheduler() (*Process, error) {
	// A config file is the only way to raise the scheduler's client QPS (default 50), which
	// would otherwise cap how fast hundreds of Pods get bound.
	cfg := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: %g
  burst: %d
leaderElection:
  leaderElect: false
`, c.Kubeconfig, c.opts.ClientQPS, c.opts.ClientBurst)
	path := filepath.Join(c.Dir, "scheduler.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("writing scheduler config: %w", err)
	}
	return c.start("kube-scheduler", c.bin("kube-scheduler"), []string{
		"--config=" + path, "--bind-address=127.0.0.1", "--secure-port=0",
	}, nil)
}

// nodeMonitorGracePeriod is the KCM's --node-monitor-grace-period: see startControllerManager.
const nodeMonitorGracePeriod = 10 * time.Minute

func (c *Cluster) startControllerManager() (*Process, error) {
	return c.start("kube-controller-manager", c.bin("kube-controller-manager"), []string{
		"--kubeconfig=" + c.Kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
		// The token controller signs legacy tokens and the root-ca publisher fills
		// kube-root-ca.crt, which projected ServiceAccount volumes reference.
		"--service-account-private-key-file=" + c.files.SAKey, "--root-ca-file=" + c.files.CACert,
		"--use-service-account-credentials=false", "--controllers=*", "--allocate-node-cidrs=false",
		// kwok stands in for the kubelets, but unlike a kubelet it never marks a Running Pod
		// Ready again: after a control-plane outage longer than the default grace (50 s), the
		// node lifecycle controller would find every Node's heartbeat stale, mark the Nodes
		// Unknown and their Pods not Ready, and the Pods would stay so for good. Past any
		// outage the local fleet is put through, a Node goes Unknown only when kwok is gone.
		"--node-monitor-grace-period=" + nodeMonitorGracePeriod.String(),
		"--kube-api-qps=" + strconv.Itoa(int(c.opts.ClientQPS)), "--kube-api-burst=" + strconv.Itoa(c.opts.ClientBurst),
	}, nil)
}

// writeKubeconfig issues a client certificate for user in groups and writes a kubeconfig
// with everything embedded to <Dir>/<file>.
func (c *Cluster) writeKubeconfig(file, user string, groups ...string) (string, *rest.Config, error) {
	cert, err := c.pki.clientCert(user, groups...)
	if err != nil {
		return "", nil, err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.host, CertificateAuthorityData: c.pki.CA.CertPEM}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert.CertPEM, ClientKeyData: cert.KeyPEM}
	kc.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	kc.CurrentContext = c.Name
	path := filepath.Join(c.Dir, file)
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", nil, fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	cfg := &rest.Config{
		Host: c.host,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: c.pki.CA.CertPEM, CertData: cert.CertPEM, KeyData: cert.KeyPEM,
		},
		QPS:   c.opts.ClientQPS,
		Burst: c.opts.ClientBurst,
	}
	return path, cfg, nil
}

// writeKubeconfigFor writes a kubeconfig at path for user in groups that reaches the API
// server at server (a real Node reaches it at its namespace's address, not loopback).
func (c *Cluster) writeKubeconfigFor(path, server, user string, groups ...string) error {
	cert, err := c.pki.clientCert(user, groups...)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[c.Name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.pki.CA.CertPEM}
	kc.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert.CertPEM, ClientKeyData: cert.KeyPEM}
	kc.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: user}
	kc.CurrentContext = c.Name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// UserKubeconfig writes a kubeconfig for a separate identity, so that audit logs and metrics
// can tell that client's requests apart. Groups default to system:masters.
func (c *Cluster) UserKubeconfig(user string, groups ...string) (string, *rest.Config, error) {
	if len(groups) == 0 {
		groups = []string{MastersGroup}
	}
	return c.writeKubeconfig("kubeconfig-"+user, user, groups...)
}

// waitHTTP polls url until it answers 200, the process dies or startTimeout passes.
func waitHTTP(ctx context.Context, p *Process, hc *http.Client, url string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, startTimeout, true, func(ctx context.Context) (bool, error) {
		if exited, exitErr := p.Exited(); exited {
			if exitErr != nil {
				return false, fmt.Errorf("%s exited: %w", p.Name, exitErr)
			}
			return false, fmt.Errorf("%s exited", p.Name)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			last = err
			return false, nil
		}
		_ = resp.Body.Close()
		last = fmt.Errorf("GET %s: %s", url, resp.Status)
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("%w (last: %w)", err, last)
	}
	return err
}

// etcdName names etcd's process (and its log file).
const etcdName = "etcd"

// StopEtcd stops etcd alone (SIGTERM, its data kept): the API server and every other process
// keep running, and every request that reaches storage fails until StartEtcd.
func (c *Cluster) StopEtcd() {
	c.mu.Lock()
	etcd := c.etcd
	c.mu.Unlock()
	if etcd != nil {
		etcd.Stop()
	}
}

// StartEtcd starts the etcd StopEtcd stopped again, with the arguments it first started with
// (the same data directory and ports, so that the running API server's --etcd-servers still
// names it), and waits until etcd is healthy and, when the API server runs, until the API
// server is ready again. The API server needs no restart: its etcd client reconnects to the
// same address by itself. etcd's log is appended to the same file.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	old, api := c.etcd, c.api
	c.mu.Unlock()
	if old == nil {
		return fmt.Errorf("cluster %s: etcd was never started", c.Name)
	}
	if exited, _ := old.Exited(); !exited {
		return fmt.Errorf("cluster %s: etcd (pid %d) still runs", c.Name, old.PID())
	}
	args := old.cmd.Args[1:]
	clientURL, ok := flagValue(args, "--listen-client-urls")
	if !ok {
		return fmt.Errorf("cluster %s: etcd was started without --listen-client-urls", c.Name)
	}
	etcd, err := c.start(etcdName, old.Bin, args, nil)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.etcd = etcd
	c.mu.Unlock()
	if err = waitHTTP(ctx, etcd, http.DefaultClient, clientURL+"/health"); err != nil {
		return fmt.Errorf("etcd of %s restarted: %w\n%s", c.Name, err, tail(etcd.LogPath, 40))
	}
	if api == nil {
		return nil
	}
	if exited, _ := api.Exited(); exited {
		return nil // StartAPIServer waits for it
	}
	httpClient, err := rest.HTTPClientFor(c.Config)
	if err != nil {
		return fmt.Errorf("building API server client: %w", err)
	}
	if err = waitHTTP(ctx, api, httpClient, c.host+"/readyz"); err != nil {
		return fmt.Errorf("kube-apiserver of %s after etcd restarted: %w\n%s", c.Name, err, tail(api.LogPath, 40))
	}
	return nil
}

// flagValue is the value of the first --name=value among args.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}
