package v1alpha1_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// startAPIServer installs exactly the generated fleet CRDs: the hub's from its chart and the
// ClusterReport from the spoke's, as the charts would.
func startAPIServer(t *testing.T) *envtest.Env {
	t.Helper()
	return envtest.Start(t, envtest.WithCRDDirectories(
		"charts/rayfleet-hub/crds",
		"charts/rayfleet-spoke/crds/fleet.rayfleet.io_clusterreports.yaml",
	))
}

func memberCluster(name string) *fleetv1alpha1.MemberCluster {
	return &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/region": "eu"}},
		Spec: fleetv1alpha1.MemberClusterSpec{
			KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: name + "-kubeconfig"},
		},
	}
}

func namespaceGrant(name string, spec fleetv1alpha1.NamespaceGrantSpec) *fleetv1alpha1.NamespaceGrant {
	return &fleetv1alpha1.NamespaceGrant{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func clusterReport(name string) *fleetv1alpha1.ClusterReport {
	return &fleetv1alpha1.ClusterReport{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func placementPolicy(name string, spec fleetv1alpha1.PlacementPolicySpec) *fleetv1alpha1.PlacementPolicy {
	return &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       spec,
	}
}

func binding(name string, clusters ...string) *fleetv1alpha1.RayServiceBinding {
	return &fleetv1alpha1.RayServiceBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       fleetv1alpha1.RayServiceBindingSpec{Clusters: clusters, SpecHash: "abc123"},
	}
}

func override(patch string) fleetv1alpha1.ClusterOverride {
	return fleetv1alpha1.ClusterOverride{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/region": "eu"}},
		Patch:           apiextensionsv1.JSON{Raw: []byte(patch)},
	}
}

func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{
		Type: typ, Status: status, Reason: reason,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	}
}

func TestCRDsAcceptValidObjectsAndApplyDefaults(t *testing.T) {
	env := startAPIServer(t)
	c := env.Client

	mc := memberCluster("m1")
	mc.Spec.Taints = []corev1.Taint{{Key: "gpu", Value: "a100", Effect: corev1.TaintEffectNoSchedule}}
	mc.Spec.CapacityLimits = corev1.ResourceList{"cpu": resource.MustParse("128"), "memory": resource.MustParse("512Gi"),
		"nvidia.com/gpu": resource.MustParse("8"), "google.com/tpu": resource.MustParse("0")}
	mustCreate(t, c, mc)
	if got := mc.Spec.KubeconfigSecretRef.Key; got != fleetv1alpha1.DefaultKubeconfigKey {
		t.Errorf("kubeconfigSecretRef.key defaulted to %q, want %q", got, fleetv1alpha1.DefaultKubeconfigKey)
	}
	heartbeat := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	capacity := fleetv1alpha1.ClusterCapacity{
		Allocatable: corev1.ResourceList{"cpu": resource.MustParse("64"), "nvidia.com/gpu": resource.MustParse("8")},
		Free:        corev1.ResourceList{"cpu": resource.MustParse("12500m"), "nvidia.com/gpu": resource.MustParse("2")},
	}
	mc.Status = fleetv1alpha1.MemberClusterStatus{
		ObservedGeneration: mc.Generation,
		Conditions:         []metav1.Condition{condition(fleetv1alpha1.ConditionReady, metav1.ConditionTrue, fleetv1alpha1.ReasonMemberReady)},
		Capacity:           &capacity,
		Nodes:              &fleetv1alpha1.NodeCounts{Total: 4, Ready: 3},
		Workloads:          &fleetv1alpha1.WorkloadCounts{RayClusters: 2, RayServices: 1, RayServicesReady: 1},
		LastHeartbeatTime:  &heartbeat,
	}
	mustUpdateStatus(t, c, mc)
	var gotMC fleetv1alpha1.MemberCluster
	mustGet(t, c, mc, &gotMC)
	if free := gotMC.Status.Capacity.Free["nvidia.com/gpu"]; free.Value() != 2 {
		t.Errorf("status.capacity.free[nvidia.com/gpu] = %s, want 2", free.String())
	}

	grant := namespaceGrant("team-a", fleetv1alpha1.NamespaceGrantSpec{
		Namespaces: []string{"team-a"},
		Members:    &fleetv1alpha1.MemberGrant{ClusterSelector: &metav1.LabelSelector{}},
		Traffic: []fleetv1alpha1.TrafficGrant{{Cluster: "*", Gateways: []fleetv1alpha1.GatewayGrant{{Namespace: "gw", Name: "*"}},
			Hostnames: []string{"*.a.example.com", "*"}}},
	})
	mustCreate(t, c, grant)
	if got := grant.Spec.Traffic[0].PathPrefixes; len(got) != 1 || got[0] != "/" {
		t.Errorf("traffic[0].pathPrefixes defaulted to %v, want [/]", got)
	}

	report := clusterReport(fleetv1alpha1.ClusterReportName)
	mustCreate(t, c, report)
	report.Status = fleetv1alpha1.ClusterReportStatus{
		HeartbeatTime: heartbeat, AgentVersion: "v0.1.0", KubernetesVersion: "v1.36.1",
		Capacity: capacity, Nodes: fleetv1alpha1.NodeCounts{Total: 4, Ready: 4},
		Conditions: []metav1.Condition{condition(fleetv1alpha1.ConditionAgentReady, metav1.ConditionTrue, fleetv1alpha1.ReasonAgentRunning)},
	}
	mustUpdateStatus(t, c, report)

	pp := placementPolicy("eu-gpus", fleetv1alpha1.PlacementPolicySpec{
		ClusterNames: []string{"m1", "m2"},
		SpreadBy:     "topology.kubernetes.io/region",
		Tolerations:  []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}},
		Overrides:    []fleetv1alpha1.ClusterOverride{override(`{"rayClusterConfig":{"rayVersion":"2.52.0"}}`)},
		Rollout: &fleetv1alpha1.RolloutStrategy{
			MaxUnavailableClusters: ptr.To(intstr.FromString("50%")),
			Stages: []fleetv1alpha1.RolloutStage{
				{Name: "canary", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "canary"}},
					MaxConcurrency: ptr.To(intstr.FromInt32(1)), SoakSeconds: ptr.To[int32](120), Approval: true},
				{Name: "prod", ClusterSelector: &metav1.LabelSelector{}},
			},
			SortingLabelKey: "region", RevisionHistoryLimit: ptr.To[int32](5),
		},
		Failover: &fleetv1alpha1.FailoverPolicy{PurgeMode: fleetv1alpha1.PurgeNever},
	})
	mustCreate(t, c, pp)
	checkPolicyDefaults(t, pp)
	var gotPP fleetv1alpha1.PlacementPolicy
	mustGet(t, c, pp, &gotPP)
	if got := string(gotPP.Spec.Overrides[0].Patch.Raw); got != `{"rayClusterConfig":{"rayVersion":"2.52.0"}}` {
		t.Errorf("override patch read back as %s: unknown fields were pruned", got)
	}
	mustCreate(t, c, placementPolicy(fleetv1alpha1.DefaultPlacementPolicyName, fleetv1alpha1.PlacementPolicySpec{}))
	checkBlueGreenDefaults(t, c)
	checkCapacityDefaults(t, c)

	rsb := binding("serve", "m1", "m2")
	mustCreate(t, c, rsb)
	rsb.Status = fleetv1alpha1.RayServiceBindingStatus{
		ObservedGeneration: rsb.Generation,
		Conditions:         []metav1.Condition{condition(fleetv1alpha1.ConditionPlaced, metav1.ConditionTrue, fleetv1alpha1.ReasonClustersChosen)},
		Clusters: []fleetv1alpha1.ClusterStatus{{
			Name: "m1", SpecHash: "abc123", ObservedGeneration: 3,
			Conditions:       []metav1.Condition{condition(string(rayv1.RayServiceReady), metav1.ConditionTrue, "NonZeroServeEndpoints")},
			ServiceStatus:    rayv1.Running,
			ActiveRayCluster: "serve-abcde", NumServeEndpoints: 2, LastSeenTime: &heartbeat,
			Applications: map[string]rayv1.AppStatus{"app": {
				Status:      rayv1.ApplicationStatusEnum.RUNNING,
				Deployments: map[string]rayv1.ServeDeploymentStatus{"d": {Status: rayv1.DeploymentStatusEnum.HEALTHY}},
			}},
		}},
	}
	mustUpdateStatus(t, c, rsb)
	var gotRSB fleetv1alpha1.RayServiceBinding
	mustGet(t, c, rsb, &gotRSB)
	if got := gotRSB.Status.Clusters[0].Applications["app"].Deployments["d"].Status; got != rayv1.DeploymentStatusEnum.HEALTHY {
		t.Errorf("deployment status read back as %q", got)
	}
}

// checkPolicyDefaults checks the CRD defaults of a policy that set neither clusters nor the
// rollout and failover timings.
func checkPolicyDefaults(t *testing.T, pp *fleetv1alpha1.PlacementPolicy) {
	t.Helper()
	s := pp.Spec
	got := fmt.Sprintf("clusters=%v type=%s soak=%v deadline=%v toleration=%v",
		ptr.Deref(s.Clusters, 0), s.Rollout.Type, ptr.Deref(s.Rollout.SoakSeconds, -1),
		ptr.Deref(s.Rollout.ProgressDeadlineSeconds, -1), ptr.Deref(s.Failover.TolerationSeconds, -1))
	want := fmt.Sprintf("clusters=%v type=%s soak=%v deadline=%v toleration=%v",
		fleetv1alpha1.DefaultClusters, fleetv1alpha1.RolloutRolling, fleetv1alpha1.DefaultSoakSeconds,
		fleetv1alpha1.DefaultProgressDeadlineSeconds, fleetv1alpha1.DefaultFailoverTolerationSeconds)
	if got != want {
		t.Errorf("defaults: got %s, want %s", got, want)
	}
}

// checkBlueGreenDefaults creates a BlueGreen policy with traffic that sets nothing optional and
// checks the defaults the CRD applies.
func checkBlueGreenDefaults(t *testing.T, c client.Client) {
	t.Helper()
	pp := placementPolicy("blue-green", fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](8),
		Rollout:  &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{}},
		Traffic: &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"},
			Hostnames: []string{"serve.example.com", "*.example.org"}},
	})
	mustCreate(t, c, pp)
	bg, tr := pp.Spec.Rollout.BlueGreen, pp.Spec.Traffic
	got := fmt.Sprintf("step=%d interval=%d retire=%d fallback=%s path=%s kind=%s",
		ptr.Deref(bg.StepPercent, -1), ptr.Deref(bg.IntervalSeconds, -1), ptr.Deref(bg.RetireAfterSeconds, -1),
		bg.Fallback, tr.PathPrefix, tr.BackendKind)
	want := fmt.Sprintf("step=%d interval=%d retire=%d fallback=%s path=/ kind=%s",
		fleetv1alpha1.DefaultBlueGreenStepPercent, fleetv1alpha1.DefaultBlueGreenIntervalSeconds,
		fleetv1alpha1.DefaultBlueGreenRetireAfterSeconds, fleetv1alpha1.FallbackNone, fleetv1alpha1.BackendService)
	if got != want {
		t.Errorf("BlueGreen defaults: got %s, want %s", got, want)
	}
}

// checkCapacityDefaults creates a BlueGreen policy whose capacity follows the traffic with an
// empty capacity, and checks the surge the CRD gives it.
func checkCapacityDefaults(t *testing.T, c client.Client) {
	t.Helper()
	pp := placementPolicy("blue-green-capacity", fleetv1alpha1.PlacementPolicySpec{
		Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen,
			BlueGreen: &fleetv1alpha1.BlueGreenStrategy{Capacity: &fleetv1alpha1.BlueGreenCapacity{}}},
		Traffic: &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}},
	})
	mustCreate(t, c, pp)
	if got := ptr.Deref(pp.Spec.Rollout.BlueGreen.Capacity.SurgePercent, -1); got != fleetv1alpha1.DefaultBlueGreenSurgePercent {
		t.Errorf("capacity.surgePercent defaulted to %d, want %d", got, fleetv1alpha1.DefaultBlueGreenSurgePercent)
	}
}

func TestCRDsRejectInvalidObjects(t *testing.T) {
	env := startAPIServer(t)
	ctx := context.Background()

	tests := []struct {
		name string
		obj  client.Object
		// setStatus, when set, makes the case a status write: obj is created (it must be
		// valid), then setStatus changes its status and the status update must be rejected.
		setStatus func(client.Object)
		want      string
	}{
		{
			name: "namespace grant selecting no namespace",
			obj: namespaceGrant("g-none", fleetv1alpha1.NamespaceGrantSpec{
				Members: &fleetv1alpha1.MemberGrant{ClusterNames: []string{"m1"}}}),
			want: "set namespaces, namespaceSelector or both",
		},
		{
			name: "namespace grant of members naming none",
			obj: namespaceGrant("g-members", fleetv1alpha1.NamespaceGrantSpec{
				Namespaces: []string{"team"}, Members: &fleetv1alpha1.MemberGrant{}}),
			want: "set clusterNames, clusterSelector or both",
		},
		{
			name: "namespace grant of traffic without hostnames",
			obj: namespaceGrant("g-hosts", fleetv1alpha1.NamespaceGrantSpec{Namespaces: []string{"team"},
				Traffic: []fleetv1alpha1.TrafficGrant{{Gateways: []fleetv1alpha1.GatewayGrant{{Namespace: "gw", Name: "public"}}}}}),
			want: "spec.traffic[0].hostnames",
		},
		{
			name: "namespace grant of a hostname wildcard in the middle",
			obj: namespaceGrant("g-wild", fleetv1alpha1.NamespaceGrantSpec{Namespaces: []string{"team"},
				Traffic: []fleetv1alpha1.TrafficGrant{{Gateways: []fleetv1alpha1.GatewayGrant{{Namespace: "gw", Name: "*"}},
					Hostnames: []string{"a.*.example.com"}}}}),
			want: "spec.traffic[0].hostnames[0]",
		},
		{
			name: "member cluster name is not a DNS label",
			obj:  memberCluster("eu.m1"),
			want: "a MemberCluster name must be a DNS label",
		},
		{
			name: "member cluster without a Secret name",
			obj: func() client.Object {
				mc := memberCluster("m-no-secret")
				mc.Spec.KubeconfigSecretRef.Name = ""
				return mc
			}(),
			want: "spec.kubeconfigSecretRef.name",
		},
		{
			name: "member cluster taint with an unknown effect",
			obj: func() client.Object {
				mc := memberCluster("m-bad-taint")
				mc.Spec.Taints = []corev1.Taint{{Key: "gpu", Effect: "Sometimes"}}
				return mc
			}(),
			want: "taint effect must be NoSchedule, PreferNoSchedule or NoExecute",
		},
		{
			name: "member cluster with a negative capacity limit",
			obj: func() client.Object {
				mc := memberCluster("m-negative-limit")
				mc.Spec.CapacityLimits = corev1.ResourceList{"cpu": resource.MustParse("64"), "nvidia.com/gpu": resource.MustParse("-1")}
				return mc
			}(),
			want: "capacity limits must not be negative",
		},
		{
			name: "cluster report not named local",
			obj:  clusterReport("other"),
			want: "the ClusterReport must be named 'local'",
		},
		{
			name: "policy asking for zero clusters",
			obj:  placementPolicy("zero", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](0)}),
			want: "spec.clusters: Invalid value: 0: spec.clusters in body should be greater than or equal to 1",
		},
		{
			name: "policy naming a cluster twice",
			obj:  placementPolicy("dup", fleetv1alpha1.PlacementPolicySpec{ClusterNames: []string{"m1", "m1"}}),
			want: `spec.clusterNames[1]: Duplicate value: "m1"`,
		},
		{
			name: "policy asking for more clusters than it names",
			obj: placementPolicy("too-many", fleetv1alpha1.PlacementPolicySpec{
				ClusterNames: []string{"m1", "m2"}, Clusters: ptr.To[int32](3),
			}),
			want: "clusters cannot exceed the number of clusterNames",
		},
		{
			name: "policy spreading by something that is not a label key",
			obj:  placementPolicy("bad-spread", fleetv1alpha1.PlacementPolicySpec{SpreadBy: "region zone"}),
			want: "spreadBy must be a label key",
		},
		{
			name: "policy spreading by a key with an empty name",
			obj:  placementPolicy("bad-spread-prefix", fleetv1alpha1.PlacementPolicySpec{SpreadBy: "topology.kubernetes.io/"}),
			want: "spreadBy must be a label key",
		},
		{
			name: "policy with an unknown rollout type",
			obj: placementPolicy("canary", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: "Canary"},
			}),
			want: `spec.rollout.type: Unsupported value: "Canary"`,
		},
		{
			name: "blueGreen settings on a Rolling rollout",
			obj: placementPolicy("blue-green", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutRolling, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{}},
			}),
			want: "blueGreen is only used with type BlueGreen",
		},
		{
			name: "stages on a BlueGreen rollout",
			obj: placementPolicy("blue-green", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, Stages: []fleetv1alpha1.RolloutStage{
					{Name: "a", ClusterSelector: &metav1.LabelSelector{}},
				}},
			}),
			want: "stages are not used with type BlueGreen",
		},
		{
			name: "a step of 0%",
			obj: placementPolicy("blue-green", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen,
					BlueGreen: &fleetv1alpha1.BlueGreenStrategy{StepPercent: ptr.To[int32](0)}},
			}),
			want: "spec.rollout.blueGreen.stepPercent",
		},
		{
			name: "capacity following without traffic to follow",
			obj: placementPolicy("blue-green", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen,
					BlueGreen: &fleetv1alpha1.BlueGreenStrategy{Capacity: &fleetv1alpha1.BlueGreenCapacity{}}},
			}),
			want: "rollout.blueGreen.capacity needs traffic",
		},
		{
			name: "a surge of 0%",
			obj: placementPolicy("blue-green", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen,
					BlueGreen: &fleetv1alpha1.BlueGreenStrategy{Capacity: &fleetv1alpha1.BlueGreenCapacity{SurgePercent: ptr.To[int32](0)}}},
				Traffic: &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}},
			}),
			want: "spec.rollout.blueGreen.capacity.surgePercent",
		},
		{
			name: "9 clusters routed by a BlueGreen rollout",
			obj: placementPolicy("blue-green", fleetv1alpha1.PlacementPolicySpec{
				Clusters: ptr.To[int32](9),
				Rollout:  &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen},
				Traffic:  &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}},
			}),
			want: "at most 8 with a BlueGreen rollout",
		},
		{
			name: "a traffic cluster that is no member name",
			obj: placementPolicy("traffic", fleetv1alpha1.PlacementPolicySpec{
				Traffic: &fleetv1alpha1.TrafficSpec{Cluster: "Not_A_Name", ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}},
			}),
			want: "cluster must be a MemberCluster name",
		},
		{
			name: "an unknown backend kind",
			obj: placementPolicy("traffic", fleetv1alpha1.PlacementPolicySpec{
				Traffic: &fleetv1alpha1.TrafficSpec{BackendKind: "Ingress", ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "gw", Name: "gw"}},
			}),
			want: `spec.traffic.backendKind: Unsupported value: "Ingress"`,
		},
		{
			name: "two stages of one name",
			obj: placementPolicy("stages", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{Stages: []fleetv1alpha1.RolloutStage{
					{Name: "a", ClusterSelector: &metav1.LabelSelector{}}, {Name: "a", ClusterSelector: &metav1.LabelSelector{}},
				}},
			}),
			want: "Duplicate value",
		},
		{
			name: "rollout deadline not past the soak time",
			obj: placementPolicy("deadline", fleetv1alpha1.PlacementPolicySpec{
				Rollout: &fleetv1alpha1.RolloutStrategy{SoakSeconds: ptr.To[int32](600)},
			}),
			want: "progressDeadlineSeconds must be greater than soakSeconds",
		},
		{
			name: "override with an empty patch",
			obj: placementPolicy("empty-patch", fleetv1alpha1.PlacementPolicySpec{
				Overrides: []fleetv1alpha1.ClusterOverride{override(`{}`)},
			}),
			want: "spec.overrides[0].patch: Invalid value: 0: spec.overrides[0].patch in body should have at least 1 properties",
		},
		{
			name: "override whose patch is not an object",
			obj: placementPolicy("list-patch", fleetv1alpha1.PlacementPolicySpec{
				Overrides: []fleetv1alpha1.ClusterOverride{override(`["rayClusterConfig"]`)},
			}),
			want: `spec.overrides[0].patch: Invalid value: "array": spec.overrides[0].patch in body must be of type object`,
		},
		{
			name: "failover with a negative toleration",
			obj: placementPolicy("negative", fleetv1alpha1.PlacementPolicySpec{
				Failover: &fleetv1alpha1.FailoverPolicy{TolerationSeconds: ptr.To[int64](-1)},
			}),
			want: "spec.failover.tolerationSeconds in body should be greater than or equal to 0",
		},
		{
			name: "binding placing on a cluster twice",
			obj:  binding("dup", "m1", "m1"),
			want: `spec.clusters[1]: Duplicate value: "m1"`,
		},
		{
			name: "binding placing on a cluster that cannot be a MemberCluster",
			obj:  binding("upper", "M1"),
			want: "spec.clusters[0]",
		},
		{
			name: "binding status listing a cluster twice",
			obj:  binding("dup-status", "m1"),
			setStatus: func(o client.Object) {
				o.(*fleetv1alpha1.RayServiceBinding).Status.Clusters = []fleetv1alpha1.ClusterStatus{{Name: "m1"}, {Name: "m1"}}
			},
			want: `status.clusters[1]: Duplicate value: {"name":"m1"}`,
		},
		{
			name: "binding status with an unknown capacity direction",
			obj:  binding("capacity-direction", "m1"),
			setStatus: func(o client.Object) {
				o.(*fleetv1alpha1.RayServiceBinding).Status.Rollout = &fleetv1alpha1.RolloutStatus{
					BlueGreen: &fleetv1alpha1.BlueGreenStatus{Step: fleetv1alpha1.BlueGreenShifting,
						Capacity: &fleetv1alpha1.BlueGreenCapacityStatus{Direction: "Sideways", Green: 25, Blue: 100}}}
			},
			want: `status.rollout.blueGreen.capacity.direction: Unsupported value: "Sideways"`,
		},
		{
			name: "binding status with a capacity target above 100%",
			obj:  binding("capacity-target", "m1"),
			setStatus: func(o client.Object) {
				o.(*fleetv1alpha1.RayServiceBinding).Status.Rollout = &fleetv1alpha1.RolloutStatus{
					BlueGreen: &fleetv1alpha1.BlueGreenStatus{Step: fleetv1alpha1.BlueGreenShifting,
						Capacity: &fleetv1alpha1.BlueGreenCapacityStatus{Direction: fleetv1alpha1.CapacityForward, Green: 125, Blue: 100}}}
			},
			want: "status.rollout.blueGreen.capacity.green",
		},
		{
			name: "member cluster status with an unknown Pod Security level",
			obj:  memberCluster("m-strict"),
			setStatus: func(o client.Object) {
				o.(*fleetv1alpha1.MemberCluster).Status.PodSecurityLevel = "strict"
			},
			want: `status.podSecurityLevel: Unsupported value: "strict"`,
		},
		{
			name: "member cluster status listing an unenforced namespace twice",
			obj:  memberCluster("m-dup-ns"),
			setStatus: func(o client.Object) {
				o.(*fleetv1alpha1.MemberCluster).Status.UnenforcedNamespaces = []fleetv1alpha1.UnenforcedNamespace{{Name: "team"}, {Name: "team"}}
			},
			want: `status.unenforcedNamespaces[1]: Duplicate value: {"name":"team"}`,
		},
		{
			name: "cluster report status without a heartbeat",
			obj:  clusterReport(fleetv1alpha1.ClusterReportName),
			setStatus: func(o client.Object) {
				o.(*fleetv1alpha1.ClusterReport).Status.AgentVersion = "v0.1.0"
			},
			want: "status.heartbeatTime: Required value",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := env.Client.Create(ctx, tt.obj)
			if tt.setStatus != nil {
				if err != nil {
					t.Fatalf("creating the object for a status case: %v", err)
				}
				tt.setStatus(tt.obj)
				err = env.Client.Status().Update(ctx, tt.obj)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// TestPrinterColumns reads MemberClusters as kubectl get does (the server-side Table), so the
// columns an operator sees are checked rather than the CRD's text.
func TestPrinterColumns(t *testing.T) {
	env := startAPIServer(t)
	mc := memberCluster("m1")
	mustCreate(t, env.Client, mc)
	mc.Status.Conditions = []metav1.Condition{
		condition(fleetv1alpha1.ConditionReady, metav1.ConditionFalse, fleetv1alpha1.ReasonMemberNotReady),
		condition(fleetv1alpha1.ConditionReachable, metav1.ConditionTrue, fleetv1alpha1.ReasonAPIServerReachable),
		condition(fleetv1alpha1.ConditionAgentReady, metav1.ConditionFalse, fleetv1alpha1.ReasonHeartbeatStale),
	}
	mustUpdateStatus(t, env.Client, mc)

	table := getTable(t, env.Config, "/apis/fleet.rayfleet.io/v1alpha1/memberclusters")
	var names []string
	for _, col := range table.ColumnDefinitions {
		if col.Priority == 0 {
			names = append(names, col.Name)
		}
	}
	if got, want := strings.Join(names, ","), "Name,Ready,Reachable,AgentReady,Heartbeat,Age"; got != want {
		t.Errorf("columns = %s, want %s", got, want)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows = %d, want 1", len(table.Rows))
	}
	if got := fmt.Sprint(table.Rows[0].Cells[:4]); got != "[m1 False True False]" {
		t.Errorf("first cells = %s, want [m1 False True False]", got)
	}
}

func getTable(t *testing.T, cfg *rest.Config, path string) metav1.Table {
	t.Helper()
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.JoinPath(cfg.Host, path) // envtest's Host ends with a slash
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s as a Table: status %d, %v", path, resp.StatusCode, err)
	}
	return table
}

func mustCreate(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func mustUpdateStatus(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Status().Update(context.Background(), obj); err != nil {
		t.Fatalf("updating the status of %T %s: %v", obj, obj.GetName(), err)
	}
}

func mustGet(t *testing.T, c client.Client, key, into client.Object) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(key), into); err != nil {
		t.Fatalf("reading %T %s: %v", key, key.GetName(), err)
	}
}
