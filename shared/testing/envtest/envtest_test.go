package envtest

import (
	"context"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func minimalRayCluster(name string) *rayv1.RayCluster {
	return &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: rayv1.RayClusterSpec{
			HeadGroupSpec: rayv1.HeadGroupSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "ray-head", Image: "rayproject/ray:2.52.0"}},
				}},
			},
		},
	}
}

func TestStartInstallsRayCRDs(t *testing.T) {
	env := Start(t)
	ctx := context.Background()

	rc := minimalRayCluster("demo")
	if err := env.Client.Create(ctx, rc); err != nil {
		t.Fatalf("creating a RayCluster: %v", err)
	}
	// The status subresource exists: a status write survives and a spec read-back is intact.
	rc.Status.ReadyWorkerReplicas = 3
	if err := env.Client.Status().Update(ctx, rc); err != nil {
		t.Fatalf("updating the RayCluster status: %v", err)
	}
	var got rayv1.RayCluster
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rc), &got); err != nil {
		t.Fatalf("reading the RayCluster back: %v", err)
	}
	if got.Status.ReadyWorkerReplicas != 3 {
		t.Errorf("status.readyWorkerReplicas = %d, want 3", got.Status.ReadyWorkerReplicas)
	}
	if n := len(got.Spec.HeadGroupSpec.Template.Spec.Containers); n != 1 {
		t.Errorf("head containers = %d, want 1", n)
	}

	var services rayv1.RayServiceList
	if err := env.Client.List(ctx, &services); err != nil {
		t.Errorf("listing RayServices (is the CRD installed?): %v", err)
	}

	// KubeConfig points at the same server.
	restCfg, err := clientcmd.RESTConfigFromKubeConfig(env.KubeConfig)
	if err != nil {
		t.Fatalf("parsing KubeConfig: %v", err)
	}
	if strings.TrimSuffix(restCfg.Host, "/") != strings.TrimSuffix(env.Config.Host, "/") {
		t.Errorf("KubeConfig host = %q, want %q", restCfg.Host, env.Config.Host)
	}
}

func TestStartNIsolatesServers(t *testing.T) {
	envs := StartN(t, 2)
	ctx := context.Background()
	if envs[0].Config.Host == envs[1].Config.Host {
		t.Fatalf("both servers listen on %s", envs[0].Config.Host)
	}
	rc := minimalRayCluster("only-in-first")
	if err := envs[0].Client.Create(ctx, rc); err != nil {
		t.Fatalf("creating a RayCluster: %v", err)
	}
	err := envs[1].Client.Get(ctx, client.ObjectKeyFromObject(rc), &rayv1.RayCluster{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("reading the RayCluster from the second server: err = %v, want NotFound", err)
	}
}
