//go:build e2e

package localcluster

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestEtcdStopAndStart stops etcd alone and starts it again: meanwhile the API server (still
// running) fails reads that reach storage; afterwards the same API server process, never
// restarted, serves again what was stored before and takes writes.
func TestEtcdStopAndStart(t *testing.T) {
	c, err := Start(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	if err = c.CreateNamespace(t.Context(), "before-restart"); err != nil {
		t.Fatal(err)
	}
	var before corev1.Namespace
	if err = c.Client.Get(t.Context(), client.ObjectKey{Name: "before-restart"}, &before); err != nil {
		t.Fatal(err)
	}
	if err = c.StartEtcd(t.Context()); err == nil {
		t.Fatal("StartEtcd succeeded while etcd runs")
	}
	apiPID := c.api.PID()

	c.StopEtcd()
	if exited, _ := c.etcd.Exited(); !exited {
		t.Fatal("etcd still runs after StopEtcd")
	}
	// A Get without a resourceVersion is a quorum read: it must reach etcd, which is gone.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	var ns corev1.Namespace
	err = c.Client.Get(ctx, client.ObjectKey{Name: "before-restart"}, &ns)
	cancel()
	if err == nil {
		t.Fatal("a quorum read succeeded while etcd was stopped")
	}
	t.Logf("read while etcd was stopped: %v", err)

	begin := time.Now()
	if err = c.StartEtcd(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Logf("etcd healthy and the API server ready again in %v", time.Since(begin).Round(time.Millisecond))
	if exited, _ := c.api.Exited(); exited || c.api.PID() != apiPID {
		t.Fatalf("the API server was restarted or exited (pid %d, was %d)", c.api.PID(), apiPID)
	}
	if err = c.Client.Get(t.Context(), client.ObjectKey{Name: "before-restart"}, &ns); err != nil {
		t.Fatalf("the namespace created before the restart: %v", err)
	}
	if ns.UID != before.UID {
		t.Fatalf("the namespace created before the restart has UID %s, was %s", ns.UID, before.UID)
	}
	if err = c.CreateNamespace(t.Context(), "after-restart"); err != nil {
		t.Fatalf("writing after the restart: %v", err)
	}
}
