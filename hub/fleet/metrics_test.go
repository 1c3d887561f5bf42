package fleet

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/hub/placement"
	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestStatusLatencyCountsEachMemberStatusOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "rs"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	withUpdate := func(at time.Time) *rayv1.RayService {
		u := metav1.NewTime(at)
		return &rayv1.RayService{Status: rayv1.RayServiceStatuses{LastUpdateTime: &u}}
	}
	steps := []struct {
		name   string
		copies map[string]*rayv1.RayService
		want   int
	}{
		{name: "two new member statuses", copies: map[string]*rayv1.RayService{"a": withUpdate(t0), "b": withUpdate(t0)}, want: 2},
		{name: "the same statuses again (a resync)", copies: map[string]*rayv1.RayService{"a": withUpdate(t0), "b": withUpdate(t0)}, want: 2},
		{name: "one member updated", copies: map[string]*rayv1.RayService{"a": withUpdate(t0.Add(time.Second)), "b": withUpdate(t0)}, want: 3},
		{name: "no copy or no update time counts nothing", copies: map[string]*rayv1.RayService{"c": nil, "d": {}}, want: 3},
	}
	for _, st := range steps {
		m.statusWritten(key, st.copies, t0.Add(2*time.Second))
		if got := histogramCount(t, reg); got != st.want {
			t.Errorf("%s: %d observations, want %d", st.name, got, st.want)
		}
	}
	m.placed(key, 2)
	if got := testutil.ToFloat64(m.clusters.WithLabelValues("ns", "rs")); got != 2 {
		t.Errorf("clusters gauge = %v, want 2", got)
	}
	m.forget(key)
	if got := testutil.CollectAndCount(m.clusters); got != 0 {
		t.Errorf("after forget, %d gauge series, want 0", got)
	}
	var nilMetrics *metrics
	nilMetrics.decision(placement.ResultPlaced) // must not panic
}

// histogramCount reads the number of latency observations from reg.
func histogramCount(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "rayfleet_member_status_latency_seconds" && len(mf.GetMetric()) == 1 {
			return int(mf.GetMetric()[0].GetHistogram().GetSampleCount())
		}
	}
	return 0
}

func TestRolloutPhaseIsOneSeries(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "rs"}
	for _, phase := range []fleetv1alpha1.RolloutPhase{
		fleetv1alpha1.RolloutProgressing, fleetv1alpha1.RolloutAwaitingApproval, fleetv1alpha1.RolloutComplete,
	} {
		m.rollout(key, nil, &rollout.Decision{Status: fleetv1alpha1.RolloutStatus{Phase: phase}})
		if got := testutil.CollectAndCount(m.phase); got != 1 {
			t.Errorf("in %s: %d phase series, want 1", phase, got)
		}
		if got := testutil.ToFloat64(m.phase.WithLabelValues("ns", "rs", string(phase))); got != 1 {
			t.Errorf("in %s: its series is %v, want 1", phase, got)
		}
	}
	m.forget(key)
	if got := testutil.CollectAndCount(m.phase); got != 0 {
		t.Errorf("after forget, %d phase series, want 0", got)
	}
}

func TestBlueGreenCapacitySeries(t *testing.T) {
	m, err := newMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "rs"}
	m.rollout(key, nil, &rollout.Decision{
		Status:   fleetv1alpha1.RolloutStatus{Phase: fleetv1alpha1.RolloutProgressing, BlueGreen: &fleetv1alpha1.BlueGreenStatus{GreenPercent: 25}},
		Capacity: &rollout.CapacityTargets{Direction: fleetv1alpha1.CapacityForward, Green: 50, Blue: 75},
	})
	for color, want := range map[string]float64{"Green": 50, "Blue": 75} {
		if got := testutil.ToFloat64(m.capacity.WithLabelValues("ns", "rs", color)); got != want {
			t.Errorf("%s capacity = %v, want %v", color, got, want)
		}
	}
	// The rollout goes on without capacity following the traffic: no series are left.
	m.rollout(key, nil, &rollout.Decision{Status: fleetv1alpha1.RolloutStatus{Phase: fleetv1alpha1.RolloutProgressing}})
	if got := testutil.CollectAndCount(m.capacity); got != 0 {
		t.Errorf("without capacity targets, %d capacity series, want 0", got)
	}
}
