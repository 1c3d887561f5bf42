package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/rayfleet/rayfleet/shared/labels"
)

const (
	durationName  = "kuberay_cluster_provisioned_duration_seconds"
	infoName      = "kuberay_cluster_info"
	conditionName = "kuberay_cluster_condition_provisioned"
)

// Headers exactly as KubeRay exposes them.
const (
	durationHeader = `# HELP kuberay_cluster_provisioned_duration_seconds The time, in seconds, when a RayCluster's ` + "`RayClusterProvisioned`" + ` status transitions from false (or unset) to true
# TYPE kuberay_cluster_provisioned_duration_seconds gauge
`
	infoHeader = `# HELP kuberay_cluster_info Metadata information about RayCluster custom resources
# TYPE kuberay_cluster_info gauge
`
	conditionHeader = `# HELP kuberay_cluster_condition_provisioned Indicates whether the RayCluster is provisioned
# TYPE kuberay_cluster_condition_provisioned gauge
`
)

func rayCluster(name, uid string, provisioned *bool, lbls map[string]string) *rayv1.RayCluster {
	rc := &rayv1.RayCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid), Labels: lbls}}
	if provisioned != nil {
		s := metav1.ConditionFalse
		if *provisioned {
			s = metav1.ConditionTrue
		}
		rc.Status.Conditions = []metav1.Condition{{Type: string(rayv1.RayClusterProvisioned), Status: s, Reason: "x", LastTransitionTime: metav1.Now()}}
	}
	return rc
}

// newMetrics registers RayClusterMetrics over a fake cache holding clusters on a pedantic
// registry, which also checks that Describe announces everything Collect sends.
func newMetrics(t *testing.T, funcs *interceptor.Funcs, clusters ...*rayv1.RayCluster) (*RayClusterMetrics, *prometheus.Registry) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, rc := range clusters {
		b = b.WithObjects(rc)
	}
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	reader := b.Build()
	reg := prometheus.NewPedanticRegistry()
	m, err := NewRayClusterMetrics(reg, reader)
	if err != nil {
		t.Fatal(err)
	}
	return m, reg
}

func TestCollectedSeries(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name     string
		clusters []*rayv1.RayCluster
		want     string
	}{
		{name: "no clusters", want: ""},
		{
			name: "owner kinds and provisioned conditions",
			clusters: []*rayv1.RayCluster{
				rayCluster("plain", "u1", nil, nil),
				rayCluster("served", "u2", &yes, map[string]string{labels.OriginatedFromCRD: "RayService", labels.OriginatedFromCRName: "svc"}),
				rayCluster("job", "u3", &no, map[string]string{labels.OriginatedFromCRD: "RayJob"}),
			},
			want: infoHeader + `kuberay_cluster_info{name="job",namespace="ns",owner_kind="RayJob",uid="u3"} 1
kuberay_cluster_info{name="plain",namespace="ns",owner_kind="None",uid="u1"} 1
kuberay_cluster_info{name="served",namespace="ns",owner_kind="RayService",uid="u2"} 1
` + conditionHeader + `kuberay_cluster_condition_provisioned{condition="false",name="job",namespace="ns",uid="u3"} 1
kuberay_cluster_condition_provisioned{condition="false",name="plain",namespace="ns",uid="u1"} 1
kuberay_cluster_condition_provisioned{condition="true",name="served",namespace="ns",uid="u2"} 1
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, reg := newMetrics(t, nil, tc.clusters...)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), infoName, conditionName); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestObserveProvisionedAndForget(t *testing.T) {
	m, reg := newMetrics(t, nil)
	a := rayCluster("a", "ua", nil, nil)
	aAgain := rayCluster("a", "ua2", nil, nil) // deleted and created again under the same name
	b := rayCluster("b", "ub", nil, nil)
	m.ObserveProvisioned(a, 90*time.Second)
	m.ObserveProvisioned(aAgain, 1500*time.Millisecond)
	m.ObserveProvisioned(b, 42*time.Second)

	want := durationHeader + `kuberay_cluster_provisioned_duration_seconds{name="a",namespace="ns",uid="ua"} 90
kuberay_cluster_provisioned_duration_seconds{name="a",namespace="ns",uid="ua2"} 1.5
kuberay_cluster_provisioned_duration_seconds{name="b",namespace="ns",uid="ub"} 42
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), durationName); err != nil {
		t.Fatal(err)
	}

	m.Forget("a", "ns")
	m.Forget("b", "other-ns") // same name elsewhere: kept
	want = durationHeader + `kuberay_cluster_provisioned_duration_seconds{name="b",namespace="ns",uid="ub"} 42
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), durationName); err != nil {
		t.Error(err)
	}
}

func TestListFailureKeepsTheScrape(t *testing.T) {
	funcs := &interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("cache not started")
	}}
	m, reg := newMetrics(t, funcs, rayCluster("a", "ua", nil, nil))
	m.ObserveProvisioned(rayCluster("a", "ua", nil, nil), time.Minute)
	want := durationHeader + `kuberay_cluster_provisioned_duration_seconds{name="a",namespace="ns",uid="ua"} 60
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), durationName, infoName, conditionName); err != nil {
		t.Error(err)
	}
}

func TestNilMetricsDoNothing(t *testing.T) {
	var m *RayClusterMetrics
	m.ObserveProvisioned(rayCluster("a", "ua", nil, nil), time.Second)
	m.Forget("a", "ns")
}

func TestRegisterTwiceFails(t *testing.T) {
	_, reg := newMetrics(t, nil)
	if _, err := NewRayClusterMetrics(reg, fake.NewClientBuilder().Build()); err == nil {
		t.Error("second registration succeeded, want an AlreadyRegistered error")
	}
}

func TestLint(t *testing.T) {
	m, reg := newMetrics(t, nil, rayCluster("a", "ua", nil, nil))
	m.ObserveProvisioned(rayCluster("a", "ua", nil, nil), time.Second)
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
