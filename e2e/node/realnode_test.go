//go:build e2e

// Package node runs a local cluster with one real Node (kubelet, containerd, runc, CNI bridge,
// kube-proxy in a network namespace) and real Pods from the images `make image` writes.
package node

import (
	"context"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/e2e/internal/realnode"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// podTimeout bounds a Pod's way to Running or Succeeded: image unpacking and sandbox set-up
// take seconds, several times that on a busy 2-core machine.
const podTimeout = 2 * time.Minute

// TestRealNodeRunsPods starts a cluster whose one Node is real and checks that Pods run from
// the imported images, that a Pod reaches its API server through the kubernetes Service, and
// that the Service's ClusterIP answers from the Node's namespace.
func TestRealNodeRunsPods(t *testing.T) {
	g := gomega.NewWithT(t)
	realnode.SkipUnavailable(t)
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	rayfleetImage, pauseImage := realnode.RayFleet(t), realnode.Pause(t)
	cluster := realnode.Start(t, realnode.Spec{
		Options: localcluster.Options{
			Name:    "realnode",
			CRDDirs: []string{filepath.Join(root, "charts", "rayfleet-hub", "crds")},
		},
		Prefix: netip.MustParsePrefix("10.200.0.1/24"),
		Images: []realnode.Image{rayfleetImage},
	})[0]
	ctx := t.Context()
	c := cluster.Client

	// `rayfleet status` lists hub objects with the in-cluster config: it succeeds only if the
	// Pod reached the API server at the kubernetes Service's ClusterIP.
	g.Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "default-sa-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "default", Namespace: "default"}},
	})).To(gomega.Succeed())
	podStart := time.Now()
	for _, pod := range []*corev1.Pod{
		pod("version", rayfleetImage.Name, corev1.RestartPolicyNever, "/rayfleet", "version"),
		pod("status", rayfleetImage.Name, corev1.RestartPolicyNever, "/rayfleet", "status", "--all-namespaces"),
		pod("sandbox-only", pauseImage.Name, corev1.RestartPolicyAlways),
	} {
		g.Eventually(func() error { return c.Create(ctx, pod) }, podTimeout, time.Second).Should(gomega.Succeed())
	}
	for name, want := range map[string]corev1.PodPhase{"version": corev1.PodSucceeded, "status": corev1.PodSucceeded} {
		g.Eventually(func() (corev1.PodPhase, error) {
			var p corev1.Pod
			err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: name}, &p)
			return p.Status.Phase, err
		}, podTimeout, 500*time.Millisecond).Should(gomega.Equal(want), "Pod %s", name)
		t.Logf("Pod %s %s %s after creation", name, want, time.Since(podStart).Round(time.Millisecond))
	}
	var running corev1.Pod
	g.Eventually(func() (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "sandbox-only"}, &running)
		return podReady(&running), err
	}, podTimeout, 500*time.Millisecond).Should(gomega.BeTrue(), "Pod sandbox-only Ready")
	t.Logf("Pod sandbox-only Ready %s after creation", time.Since(podStart).Round(time.Millisecond))

	// kube-proxy's rules in the Node's namespace lead the ClusterIP to the API server.
	var svc corev1.Service
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &svc)).To(gomega.Succeed())
	g.Eventually(func() error {
		dialCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		conn, err := localcluster.DialInNetNS(dialCtx, cluster.NetNS.Path, svc.Spec.ClusterIP+":443")
		if err != nil {
			return err
		}
		return conn.Close()
	}, podTimeout, time.Second).Should(gomega.Succeed())

	for _, p := range cluster.RealNodeProcesses() {
		u, err := p.Usage()
		if err != nil {
			t.Logf("%s: %v", p.Name, err)
			continue
		}
		t.Logf("%s: peak RSS %d MiB, CPU %s", p.Name, u.PeakRSSBytes>>20, u.CPU.Round(time.Millisecond))
	}
}

func pod(name, image string, restart corev1.RestartPolicy, command ...string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: restart,
			Containers: []corev1.Container{{
				Name: "main", Image: image, Command: command, ImagePullPolicy: corev1.PullNever,
			}},
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
