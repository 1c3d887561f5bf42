package builder

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

func TestRayClusterName(t *testing.T) {
	rs := newService()
	var asked int
	got := RayClusterName(rs, func(n int) string { asked = n; return "q7x2z" })
	if got != "svc-q7x2z" || asked != 5 {
		t.Errorf("RayClusterName = %q (asked for %d characters), want svc-q7x2z (5)", got, asked)
	}
	// The default source: five lower-case alphanumerics, a different name each time.
	generated := RayClusterName(rs, nil)
	if !regexp.MustCompile(`^svc-[a-z0-9]{5}$`).MatchString(generated) {
		t.Errorf("RayClusterName(nil source) = %q", generated)
	}
	seen := map[string]bool{}
	for range 20 {
		seen[RayClusterName(rs, nil)] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 generated names were all %v", seen)
	}
}

// incrementalService is newService upgrading incrementally, with an active cluster when active != "".
func incrementalService(active string) *rayv1.RayService {
	return newService(func(rs *rayv1.RayService) {
		rs.Spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
		rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{
			Type: ptr.To(rayv1.RayServiceNewClusterWithIncrementalUpgrade),
			ClusterUpgradeOptions: &rayv1.ClusterUpgradeOptions{
				StepSizePercent: ptr.To[int32](10), IntervalSeconds: ptr.To[int32](30), GatewayClassName: "istio",
			},
		}
		rs.Status.ActiveServiceStatus.RayClusterName = active
	})
}

func TestRayClusterForRayService(t *testing.T) {
	base := newService(func(rs *rayv1.RayService) {
		rs.Labels = map[string]string{"team": "a", labels.OriginatedFromCRD: "spoofed"}
		rs.Annotations = map[string]string{"note": "x", labels.KubeRayVersion: "v0.0.1"}
	})
	hash, err := rayspec.ClusterSpecHash(&base.Spec.RayClusterSpec)
	if err != nil {
		t.Fatal(err)
	}
	got, err := RayClusterForRayService(base, "svc-abcde", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := &rayv1.RayCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name: "svc-abcde", Namespace: "ns",
			Labels: map[string]string{"team": "a", labels.OriginatedFromCRName: "svc", labels.OriginatedFromCRD: "RayService"},
			Annotations: map[string]string{
				"note": "x", labels.HashWithoutReplicas: hash, labels.NumWorkerGroups: "1", labels.KubeRayVersion: "v1.6.2",
			},
			OwnerReferences: ownedBySvc,
		},
		Spec: base.Spec.RayClusterSpec,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RayClusterForRayService (-want +got):\n%s", diff)
	}
	got.Spec.WorkerGroupSpecs[0].GroupName = "changed"
	got.Labels["team"] = "b"
	if base.Spec.RayClusterSpec.WorkerGroupSpecs[0].GroupName == "changed" || base.Labels["team"] == "b" {
		t.Error("the cluster shares its spec or labels with the RayService")
	}
}

func TestRayClusterForRayServiceVersionAndHash(t *testing.T) {
	opts := DefaultOptions()
	opts.KubeRayVersion = "v9.9.9"
	a := mustRayCluster(t, newService(), "svc-a", opts)
	if v := a.Annotations[labels.KubeRayVersion]; v != "v9.9.9" {
		t.Errorf("kuberay version = %q, want the option's", v)
	}
	// The hash is over the spec as given, replicas muted: a replica change keeps it, an image change does not.
	scaled := newService(func(rs *rayv1.RayService) { rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas = ptr.To[int32](4) })
	upgraded := newService(func(rs *rayv1.RayService) {
		rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image = "rayproject/ray:2.53.0"
	})
	for _, tt := range []struct {
		name string
		rs   *rayv1.RayService
		same bool
	}{{"replicas", scaled, true}, {"image", upgraded, false}} {
		b := mustRayCluster(t, tt.rs, "svc-b", opts)
		if same := a.Annotations[labels.HashWithoutReplicas] == b.Annotations[labels.HashWithoutReplicas]; same != tt.same {
			t.Errorf("%s: hashes equal = %v, want %v", tt.name, same, tt.same)
		}
	}
	two := newService(func(rs *rayv1.RayService) {
		g := rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].DeepCopy()
		g.GroupName = "second"
		rs.Spec.RayClusterSpec.WorkerGroupSpecs = append(rs.Spec.RayClusterSpec.WorkerGroupSpecs, *g)
	})
	c := mustRayCluster(t, two, "svc-c", opts)
	if n := c.Annotations[labels.NumWorkerGroups]; n != "2" {
		t.Errorf("num-worker-groups = %q, want 2", n)
	}
}

func mustRayCluster(t *testing.T, rs *rayv1.RayService, name string, opts Options) *rayv1.RayCluster {
	t.Helper()
	rc, err := RayClusterForRayService(rs, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func TestRayClusterForRayServiceReplicas(t *testing.T) {
	tests := []struct {
		name         string
		rs           *rayv1.RayService
		cluster      string
		wantReplicas *int32
	}{
		{name: "incremental, new cluster beside the active one: replicas left to the autoscaler",
			rs: incrementalService("svc-old"), cluster: "svc-new", wantReplicas: nil},
		{name: "incremental, the active cluster itself keeps its replicas",
			rs: incrementalService("svc-old"), cluster: "svc-old", wantReplicas: ptr.To[int32](1)},
		{name: "incremental, first cluster keeps its replicas",
			rs: incrementalService(""), cluster: "svc-new", wantReplicas: ptr.To[int32](1)},
		{name: "NewCluster upgrade keeps replicas",
			rs: newService(func(rs *rayv1.RayService) {
				rs.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceNewCluster)}
				rs.Status.ActiveServiceStatus.RayClusterName = "svc-old"
			}), cluster: "svc-new", wantReplicas: ptr.To[int32](1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc, err := RayClusterForRayService(tt.rs, tt.cluster, DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			g := rc.Spec.WorkerGroupSpecs[0]
			if diff := cmp.Diff(tt.wantReplicas, g.Replicas); diff != "" {
				t.Errorf("replicas (-want +got):\n%s", diff)
			}
			if ptr.Deref(g.MinReplicas, -1) != 0 || ptr.Deref(g.MaxReplicas, -1) != 5 {
				t.Errorf("min/max replicas = %v/%v, want them kept", g.MinReplicas, g.MaxReplicas)
			}
			if tt.rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas == nil {
				t.Error("the RayService's replicas were cleared")
			}
			hash, _ := rayspec.ClusterSpecHash(&tt.rs.Spec.RayClusterSpec)
			if rc.Annotations[labels.HashWithoutReplicas] != hash {
				t.Error("the hash is not the RayService spec's")
			}
		})
	}
}

func TestRayClusterForRayServiceNameFitsValidation(t *testing.T) {
	// A RayService name of the longest valid length makes a cluster whose Services still fit.
	rs := newService(func(rs *rayv1.RayService) { rs.Name = strings.Repeat("s", 47) })
	rc, err := RayClusterForRayService(rs, RayClusterName(rs, nil), DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ClusterServeServiceName(rc)); n > 63 {
		t.Errorf("per-cluster serve Service name is %d characters", n)
	}
}
