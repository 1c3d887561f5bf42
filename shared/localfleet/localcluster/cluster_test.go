//go:build e2e

package localcluster

import (
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestStartAndStop brings up the bare control plane (etcd and kube-apiserver), uses it, and
// checks that Stop leaves no process and no state behind.
func TestStartAndStop(t *testing.T) {
	c, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.Stop()
		}
	}()
	if err := c.CreateNamespace(t.Context(), "smoke"); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{}
	if err := c.Client.Get(t.Context(), client.ObjectKey{Namespace: "smoke", Name: "default"}, sa); err != nil {
		t.Fatalf("default ServiceAccount: %v", err)
	}
	if _, err := os.Stat(c.Kubeconfig); err != nil {
		t.Fatalf("kubeconfig: %v", err)
	}
	pids := []int{c.etcd.PID(), c.api.PID()}
	begin := time.Now()
	c.Stop()
	stopped = true
	t.Logf("stopped in %v", time.Since(begin))
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still alive after Stop", pid)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("state dir %s still there after Stop (err %v)", c.Dir, err)
	}
}

// TestAPIServerStopAndStart stops the API server alone and starts it again: meanwhile the
// cluster cannot be reached; afterwards the same admin client, kubeconfig and port work and
// what was stored before the outage is still there (etcd kept running).
func TestAPIServerStopAndStart(t *testing.T) {
	c, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err := c.CreateNamespace(t.Context(), "before-outage"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartAPIServer(t.Context()); err == nil {
		t.Fatal("StartAPIServer succeeded while the API server runs")
	}

	c.StopAPIServer()
	var ns corev1.Namespace
	if err := c.Client.Get(t.Context(), client.ObjectKey{Name: "before-outage"}, &ns); err == nil {
		t.Fatal("the API server answers after StopAPIServer")
	}
	begin := time.Now()
	if err := c.StartAPIServer(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server ready again in %v", time.Since(begin).Round(time.Millisecond))
	if err := c.Client.Get(t.Context(), client.ObjectKey{Name: "before-outage"}, &ns); err != nil {
		t.Fatalf("the namespace created before the outage: %v", err)
	}
	if err := c.CreateNamespace(t.Context(), "after-outage"); err != nil {
		t.Fatalf("writing after the outage: %v", err)
	}
}
