package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

const (
	serviceInfoName      = "kuberay_service_info"
	serviceReadyName     = "kuberay_service_condition_ready"
	serviceUpgradingName = "kuberay_service_condition_upgrade_in_progress"
)

// Headers exactly as KubeRay exposes them.
const (
	serviceInfoHeader = `# HELP kuberay_service_info Metadata information about RayService custom resources
# TYPE kuberay_service_info gauge
`
	serviceReadyHeader = `# HELP kuberay_service_condition_ready Describes whether the RayService is ready. Ready means users can send requests to the underlying cluster and the number of serve endpoints is greater than 0.
# TYPE kuberay_service_condition_ready gauge
`
	serviceUpgradingHeader = `# HELP kuberay_service_condition_upgrade_in_progress Describes whether the RayService is performing a zero-downtime upgrade.
# TYPE kuberay_service_condition_upgrade_in_progress gauge
`
)

// rayService is a RayService with the given condition statuses (unset when absent from conds).
func rayService(name, uid string, conds map[rayv1.RayServiceConditionType]metav1.ConditionStatus) *rayv1.RayService {
	rs := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(uid)}}
	for t, s := range conds {
		rs.Status.Conditions = append(rs.Status.Conditions, metav1.Condition{
			Type: string(t), Status: s, Reason: "x", LastTransitionTime: metav1.Now(),
		})
	}
	return rs
}

// newServiceMetrics registers RayServiceMetrics over a fake cache holding services on a
// pedantic registry, which also checks that Describe announces everything Collect sends.
func newServiceMetrics(t *testing.T, funcs *interceptor.Funcs, services ...*rayv1.RayService) *prometheus.Registry {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := rayv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, rs := range services {
		b = b.WithObjects(rs)
	}
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	reg := prometheus.NewPedanticRegistry()
	if _, err := NewRayServiceMetrics(reg, b.Build()); err != nil {
		t.Fatal(err)
	}
	return reg
}

func TestRayServiceCollectedSeries(t *testing.T) {
	const (
		ready     = rayv1.RayServiceReady
		upgrading = rayv1.UpgradeInProgress
		yes, no   = metav1.ConditionTrue, metav1.ConditionFalse
	)
	tests := []struct {
		name     string
		services []*rayv1.RayService
		want     string
	}{
		{name: "no RayServices", want: ""},
		{
			name: "ready, upgrading, unknown and unset conditions",
			services: []*rayv1.RayService{
				rayService("serving", "u1", map[rayv1.RayServiceConditionType]metav1.ConditionStatus{ready: yes, upgrading: no}),
				rayService("upgrading", "u2", map[rayv1.RayServiceConditionType]metav1.ConditionStatus{ready: yes, upgrading: yes}),
				rayService("starting", "u3", map[rayv1.RayServiceConditionType]metav1.ConditionStatus{ready: metav1.ConditionUnknown}),
				rayService("new", "u4", nil),
			},
			want: serviceInfoHeader + `kuberay_service_info{name="new",namespace="ns",uid="u4"} 1
kuberay_service_info{name="serving",namespace="ns",uid="u1"} 1
kuberay_service_info{name="starting",namespace="ns",uid="u3"} 1
kuberay_service_info{name="upgrading",namespace="ns",uid="u2"} 1
` + serviceReadyHeader + `kuberay_service_condition_ready{condition="false",name="new",namespace="ns",uid="u4"} 1
kuberay_service_condition_ready{condition="false",name="starting",namespace="ns",uid="u3"} 1
kuberay_service_condition_ready{condition="true",name="serving",namespace="ns",uid="u1"} 1
kuberay_service_condition_ready{condition="true",name="upgrading",namespace="ns",uid="u2"} 1
` + serviceUpgradingHeader + `kuberay_service_condition_upgrade_in_progress{condition="false",name="new",namespace="ns",uid="u4"} 1
kuberay_service_condition_upgrade_in_progress{condition="false",name="serving",namespace="ns",uid="u1"} 1
kuberay_service_condition_upgrade_in_progress{condition="false",name="starting",namespace="ns",uid="u3"} 1
kuberay_service_condition_upgrade_in_progress{condition="true",name="upgrading",namespace="ns",uid="u2"} 1
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := newServiceMetrics(t, nil, tc.services...)
			err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), serviceInfoName, serviceReadyName, serviceUpgradingName)
			if err != nil {
				t.Error(err)
			}
		})
	}
}

func TestRayServiceListFailureKeepsTheScrape(t *testing.T) {
	funcs := &interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return errors.New("cache not started")
	}}
	reg := newServiceMetrics(t, funcs, rayService("a", "ua", nil))
	// The scrape succeeds, without the RayService series.
	if err := testutil.GatherAndCompare(reg, strings.NewReader(""), serviceInfoName, serviceReadyName, serviceUpgradingName); err != nil {
		t.Error(err)
	}
}

func TestRayServiceMetricsRegisterTwiceFails(t *testing.T) {
	reg := newServiceMetrics(t, nil)
	if _, err := NewRayServiceMetrics(reg, fake.NewClientBuilder().Build()); err == nil {
		t.Error("second registration succeeded, want an AlreadyRegistered error")
	}
}

func TestRayServiceMetricsLint(t *testing.T) {
	reg := newServiceMetrics(t, nil, rayService("a", "ua", nil))
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// Both collectors share one registry in the spoke: their descriptors must not clash.
func TestRayServiceAndRayClusterMetricsTogether(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reader := fake.NewClientBuilder().Build()
	if _, err := NewRayClusterMetrics(reg, reader); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRayServiceMetrics(reg, reader); err != nil {
		t.Fatal(err)
	}
}
