package rollout

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestStrategyOf(t *testing.T) {
	eu := &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
	tests := []struct {
		name    string
		in      *fleetv1alpha1.RolloutStrategy
		want    string // summary of the Strategy
		wantErr string
	}{
		{
			name: "nil: Rolling, one at a time, 60s soak, 600s deadline",
			want: "Rolling max=1 soak=1m0s deadline=10m0s rollback=false sort= stages=[]",
		},
		{
			name: "empty: the same defaults",
			in:   &fleetv1alpha1.RolloutStrategy{},
			want: "Rolling max=1 soak=1m0s deadline=10m0s rollback=false sort= stages=[]",
		},
		{
			name: "every field",
			in: &fleetv1alpha1.RolloutStrategy{
				Type: fleetv1alpha1.RolloutRolling, MaxUnavailableClusters: ptr.To(intstr.FromString("25%")),
				SoakSeconds: ptr.To[int32](0), ProgressDeadlineSeconds: ptr.To[int32](30), AutoRollback: true,
				SortingLabelKey: "order",
				Stages: []fleetv1alpha1.RolloutStage{
					{Name: "eu", ClusterSelector: eu, MaxConcurrency: ptr.To(intstr.FromInt32(3)), SoakSeconds: ptr.To[int32](5), Approval: true},
					{Name: "rest", ClusterSelector: &metav1.LabelSelector{}},
				},
			},
			want: "Rolling max=25% soak=0s deadline=30s rollback=true sort=order stages=[eu(region=eu,3,5s,approval) rest(,-,-)]",
		},
		{
			name: "type None",
			in:   &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutNone},
			want: "None max=1 soak=1m0s deadline=10m0s rollback=false sort= stages=[]",
		},
		{
			name:    "an unknown type",
			in:      &fleetv1alpha1.RolloutStrategy{Type: "Canary"},
			wantErr: `rollout type "Canary": want Rolling, None or BlueGreen`,
		},
		{
			name: "type BlueGreen with the defaults",
			in:   &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen},
			want: "BlueGreen max=1 soak=1m0s deadline=10m0s rollback=false sort= stages=[] bluegreen=20%/30s/5m0s approval=false fallback=false",
		},
		{
			name: "type BlueGreen with every field",
			in: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
				StepPercent: ptr.To[int32](50), IntervalSeconds: ptr.To[int32](5), RetireAfterSeconds: ptr.To[int32](0),
				Approval: true, Fallback: fleetv1alpha1.FallbackRolling}},
			want: "BlueGreen max=1 soak=1m0s deadline=10m0s rollback=false sort= stages=[] bluegreen=50%/5s/0s approval=true fallback=true",
		},
		{
			name: "type BlueGreen with capacity, the surge defaulted",
			in: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
				Capacity: &fleetv1alpha1.BlueGreenCapacity{}}},
			want: "BlueGreen max=1 soak=1m0s deadline=10m0s rollback=false sort= stages=[] bluegreen=20%/30s/5m0s approval=false fallback=false capacity surge=25%",
		},
		{
			name: "type BlueGreen with capacity and a surge",
			in: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen, BlueGreen: &fleetv1alpha1.BlueGreenStrategy{
				Capacity: &fleetv1alpha1.BlueGreenCapacity{SurgePercent: ptr.To[int32](40)}}},
			want: "BlueGreen max=1 soak=1m0s deadline=10m0s rollback=false sort= stages=[] bluegreen=20%/30s/5m0s approval=false fallback=false capacity surge=40%",
		},
		{
			name:    "blueGreen settings on a Rolling rollout",
			in:      &fleetv1alpha1.RolloutStrategy{BlueGreen: &fleetv1alpha1.BlueGreenStrategy{}},
			wantErr: "blueGreen is only used with type BlueGreen",
		},
		{
			name: "stages on a BlueGreen rollout",
			in: &fleetv1alpha1.RolloutStrategy{Type: fleetv1alpha1.RolloutBlueGreen,
				Stages: []fleetv1alpha1.RolloutStage{{Name: "eu", ClusterSelector: eu}}},
			wantErr: "stages are not used with type BlueGreen",
		},
		{
			name:    "a selector that does not parse",
			in:      &fleetv1alpha1.RolloutStrategy{Stages: []fleetv1alpha1.RolloutStage{{Name: "eu", ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "e u"}}}}},
			wantErr: `stage "eu": clusterSelector:`,
		},
		{
			name:    "no selector",
			in:      &fleetv1alpha1.RolloutStrategy{Stages: []fleetv1alpha1.RolloutStage{{Name: "eu"}}},
			wantErr: `stage "eu": clusterSelector is required`,
		},
		{
			name:    "a maxUnavailableClusters that is no number or percentage",
			in:      &fleetv1alpha1.RolloutStrategy{MaxUnavailableClusters: ptr.To(intstr.FromString("half"))},
			wantErr: "maxUnavailableClusters:",
		},
		{
			name: "a stage maxConcurrency that is no number or percentage",
			in: &fleetv1alpha1.RolloutStrategy{Stages: []fleetv1alpha1.RolloutStage{
				{Name: "eu", ClusterSelector: eu, MaxConcurrency: ptr.To(intstr.FromString("x%"))}}},
			wantErr: `stage "eu": maxConcurrency:`,
		},
		{
			name: "the implicit stage's name on a stage that is not the last",
			in: &fleetv1alpha1.RolloutStrategy{Stages: []fleetv1alpha1.RolloutStage{
				{Name: "rest", ClusterSelector: eu}, {Name: "us", ClusterSelector: eu}}},
			wantErr: `stage "rest": only the last stage may be named "rest"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StrategyOf(tt.in)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case summary(got) != tt.want:
				t.Errorf("strategy\n got %s\nwant %s", summary(got), tt.want)
			}
		})
	}
}

// summary renders a Strategy in one line.
func summary(s Strategy) string {
	var stages []string
	for _, st := range s.Stages {
		mc, soak := "-", "-"
		if st.MaxConcurrency != nil {
			mc = st.MaxConcurrency.String()
		}
		if st.Soak != nil {
			soak = st.Soak.String()
		}
		txt := st.Name + "(" + st.Selector.String() + "," + mc + "," + soak
		if st.Approval {
			txt += ",approval"
		}
		stages = append(stages, txt+")")
	}
	out := string(s.Type) + " max=" + s.MaxUnavailable.String() + " soak=" + s.Soak.String() + " deadline=" + s.Deadline.String() +
		" rollback=" + strconv.FormatBool(s.AutoRollback) + " sort=" + s.SortingLabelKey +
		" stages=[" + strings.Join(stages, " ") + "]"
	if s.Type == fleetv1alpha1.RolloutBlueGreen {
		b := s.BlueGreen
		out += fmt.Sprintf(" bluegreen=%d%%/%s/%s approval=%t fallback=%t", b.Step, b.Interval, b.RetireAfter, b.Approval, b.FallbackRolling)
		if b.Capacity {
			out += fmt.Sprintf(" capacity surge=%d%%", b.Surge)
		}
	}
	return out
}

func TestScaled(t *testing.T) {
	tests := []struct {
		v     intstr.IntOrString
		total int
		want  int
	}{
		{intstr.FromInt32(2), 5, 2},
		{intstr.FromInt32(9), 5, 9},
		{intstr.FromString("50%"), 5, 2},
		{intstr.FromString("10%"), 5, 1},
		{intstr.FromString("100%"), 5, 5},
		{intstr.FromString("1%"), 0, 1},
		{intstr.FromInt32(0), 5, 1},
		{intstr.FromString("bad"), 5, 1},
	}
	for _, tt := range tests {
		if got := scaled(tt.v, tt.total); got != tt.want {
			t.Errorf("scaled(%s, %d) = %d, want %d", tt.v.String(), tt.total, got, tt.want)
		}
	}
}

func TestSortMembers(t *testing.T) {
	ms := func(ws ...*clusterWrapper) []*member {
		out := make([]*member, len(ws))
		for i, w := range ws {
			out[i] = &member{Cluster: w.Cluster}
		}
		return out
	}
	names := func(ms []*member) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return strings.Join(out, ",")
	}
	byEndpoints := ms(c("b", "").ep(3), c("a", "").ep(3), c("c", "").ep(0))
	sortMembers(byEndpoints, "")
	if got := names(byEndpoints); got != "c,a,b" {
		t.Errorf("by endpoints: %s, want c,a,b", got)
	}
	byLabel := ms(c("x", "").label("k", "10"), c("y", "").label("k", "9"), c("z", ""), c("w", "").label("k", "beta"),
		c("v", "").label("k", "alpha"), c("u", "").label("k", "9"), c("t", "").label("k", "1a"))
	sortMembers(byLabel, "k")
	// Integers come first, as numbers, then other values as text, then clusters without the
	// label; ties go by name.
	if got := names(byLabel); got != "u,y,x,t,v,w,z" {
		t.Errorf("by label: %s, want u,y,x,t,v,w,z", got)
	}
}

func TestBuildStagesSkipsEmptyStages(t *testing.T) {
	s := strategy(withStages(stage("ap", "region=ap").approval(), stage("eu", "region=eu")))
	members := []*member{{Cluster: c("a", "").label("region", "eu").Cluster}, {Cluster: c("b", "").Cluster}}
	stages := buildStages(s, members, nil)
	var got []string
	for _, st := range stages {
		got = append(got, st.def.Name+":"+strings.Join(st.names(), ","))
	}
	if strings.Join(got, " ") != "eu:a rest:b" {
		t.Errorf("stages %v, want [eu:a rest:b]", got)
	}
}
