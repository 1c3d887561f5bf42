package rollout

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/runningreplicas"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// capSpec is a RayService spec with the builder's worker group "small" (1 replica, 0 to 5) and
// the given serveConfigV2.
func capSpec(config string, edit ...func(*rayv1.RayServiceSpec)) *rayv1.RayServiceSpec {
	spec := raybuilder.MakeRayService("rs", "ns").ServeConfig(config).Obj().Spec
	for _, e := range edit {
		e(&spec)
	}
	return &spec
}

// group appends a worker group to a spec built by capSpec.
func group(name string, replicas, minReplicas, maxReplicas *int32, edit ...func(*rayv1.WorkerGroupSpec)) func(*rayv1.RayServiceSpec) {
	return func(spec *rayv1.RayServiceSpec) {
		raybuilder.AppendGroup(&spec.RayClusterSpec, name, 0)
		g := &spec.RayClusterSpec.WorkerGroupSpecs[len(spec.RayClusterSpec.WorkerGroupSpecs)-1]
		g.Replicas, g.MinReplicas, g.MaxReplicas = replicas, minReplicas, maxReplicas
		for _, e := range edit {
			e(g)
		}
	}
}

func autoscaling(spec *rayv1.RayServiceSpec) {
	spec.RayClusterSpec.EnableInTreeAutoscaling = ptr.To(true)
}

// deployments is a config of one application with the given deployment entries.
func deployments(entries ...string) string {
	return "applications:\n- name: app\n  import_path: m:app\n  deployments:\n" + strings.Join(entries, "")
}

func fixed(n int32) ServeDeployment { return ServeDeployment{NumReplicas: n} }

func small() map[string]WorkerGroup {
	return map[string]WorkerGroup{"small": {Size: WorkerGroupSize{Replicas: 1, MinReplicas: 0, MaxReplicas: 5}, NumOfHosts: 1}}
}

func TestFullSet(t *testing.T) {
	tests := []struct {
		name    string
		spec    *rayv1.RayServiceSpec
		want    CapacitySet
		wantErr string
	}{
		{name: "the builder's RayService", spec: capSpec(raybuilder.RayServiceServeConfig),
			want: CapacitySet{Workers: small(), Serve: map[string]ServeDeployment{"fruit/MangoStand": fixed(1)}}},
		{name: "worker groups: KubeRay's defaults, multi-host, suspended", spec: capSpec("",
			group("unset", nil, nil, nil),
			group("multi", ptr.To[int32](2), ptr.To[int32](1), ptr.To[int32](3), func(g *rayv1.WorkerGroupSpec) { g.NumOfHosts = 4 }),
			group("off", ptr.To[int32](3), nil, nil, func(g *rayv1.WorkerGroupSpec) { g.Suspend = ptr.To(true) })),
			want: CapacitySet{Serve: map[string]ServeDeployment{}, Workers: map[string]WorkerGroup{
				"small": small()["small"],
				"unset": {Size: WorkerGroupSize{MaxReplicas: math.MaxInt32}, NumOfHosts: 1},
				"multi": {Size: WorkerGroupSize{Replicas: 2, MinReplicas: 1, MaxReplicas: 3}, NumOfHosts: 4},
				"off":   {Size: WorkerGroupSize{Replicas: 3, MaxReplicas: math.MaxInt32}, NumOfHosts: 1, Suspended: true},
			}}},
		{name: "autoscaling cluster", spec: capSpec("", autoscaling),
			want: CapacitySet{Autoscaling: true, Serve: map[string]ServeDeployment{},
				Workers: map[string]WorkerGroup{"small": {Size: WorkerGroupSize{Replicas: 1, MaxReplicas: 5}, NumOfHosts: 1, Autoscaling: true}}}},
		{name: "deployments: Ray's defaults and autoscaling forms", spec: capSpec(deployments(
			"  - name: plain\n",
			"  - name: nulled\n    num_replicas: null\n",
			"  - name: three\n    num_replicas: 3\n",
			"  - name: quoted\n    num_replicas: \"4\"\n",
			"  - name: auto\n    num_replicas: auto\n",
			"  - name: autoBounded\n    num_replicas: auto\n    autoscaling_config: {min_replicas: 0, max_replicas: 8}\n",
			"  - name: configured\n    autoscaling_config:\n      min_replicas: 2\n      max_replicas: 6\n",
			"  - name: configuredDefaults\n    autoscaling_config: {}\n",
		)),
			want: CapacitySet{Workers: small(), Serve: map[string]ServeDeployment{
				"app/plain": fixed(1), "app/nulled": fixed(1), "app/three": fixed(3), "app/quoted": fixed(4),
				"app/auto":               {Autoscaling: true, MinReplicas: 1, MaxReplicas: 100},
				"app/autoBounded":        {Autoscaling: true, MinReplicas: 0, MaxReplicas: 8},
				"app/configured":         {Autoscaling: true, MinReplicas: 2, MaxReplicas: 6},
				"app/configuredDefaults": {Autoscaling: true, MinReplicas: 1, MaxReplicas: 1},
			}}},
		{name: "an unnamed application is Ray's default; the config's own target_capacity is kept",
			spec: capSpec("target_capacity: 50\napplications:\n- import_path: m:app\n  deployments:\n  - name: D\n    num_replicas: 4\n- name: other\n  import_path: o:app\n"),
			want: CapacitySet{Workers: small(), TargetCapacity: ptr.To(50.0), Serve: map[string]ServeDeployment{"default/D": fixed(4)}}},
		{name: "target_capacity null is none", spec: capSpec("target_capacity: null\napplications: []\n"),
			want: CapacitySet{Workers: small(), Serve: map[string]ServeDeployment{}}},
		{name: "blank config: no deployment", spec: capSpec(" \n\t\n"), want: CapacitySet{Workers: small(), Serve: map[string]ServeDeployment{}}},
		{name: "nil spec", spec: nil, wantErr: "no RayService spec"},
		{name: "bad YAML", spec: capSpec("applications: [\n"), wantErr: "serveConfigV2: not valid YAML"},
		{name: "a list, not a mapping", spec: capSpec("- a\n- b\n"), wantErr: "not a YAML mapping"},
		{name: "applications not a list", spec: capSpec("applications: 3\n"), wantErr: "not a Serve config"},
		{name: "deployments not a list", spec: capSpec("applications:\n- name: a\n  deployments: {x: 1}\n"), wantErr: "not a Serve config"},
		{name: "num_replicas 0", spec: capSpec(deployments("  - name: d\n    num_replicas: 0\n")), wantErr: `deployment "d": num_replicas: must be a positive integer`},
		{name: "num_replicas negative", spec: capSpec(deployments("  - name: d\n    num_replicas: -2\n")), wantErr: "num_replicas"},
		{name: "num_replicas fractional", spec: capSpec(deployments("  - name: d\n    num_replicas: 2.5\n")), wantErr: "num_replicas"},
		{name: "num_replicas beyond int32", spec: capSpec(deployments("  - name: d\n    num_replicas: 4294967296\n")), wantErr: "num_replicas"},
		{name: "num_replicas a word", spec: capSpec(deployments("  - name: d\n    num_replicas: many\n")), wantErr: `got "many"`},
		{name: "num_replicas a list", spec: capSpec(deployments("  - name: d\n    num_replicas: [1]\n")), wantErr: "num_replicas"},
		{name: "num_replicas and autoscaling_config", spec: capSpec(deployments("  - name: d\n    num_replicas: 2\n    autoscaling_config: {max_replicas: 3}\n")),
			wantErr: "Ray allows one of them"},
		{name: "autoscaling min above max", spec: capSpec(deployments("  - name: d\n    autoscaling_config: {min_replicas: 5, max_replicas: 2}\n")),
			wantErr: "min_replicas 5 and max_replicas 2"},
		{name: "autoscaling negative min", spec: capSpec(deployments("  - name: d\n    autoscaling_config: {min_replicas: -1}\n")), wantErr: "min_replicas -1"},
		{name: "deployment without a name", spec: capSpec(deployments("  - num_replicas: 2\n")), wantErr: "deployments[0]: no name"},
		{name: "deployment twice", spec: capSpec(deployments("  - name: d\n", "  - name: d\n")), wantErr: `deployment "d" appears twice`},
		{name: "application twice", spec: capSpec("applications:\n- name: a\n- name: a\n"), wantErr: `application "a" appears twice`},
		{name: "target_capacity over 100", spec: capSpec("target_capacity: 150\n"), wantErr: "from 0 to 100, got 150"},
		{name: "target_capacity a word", spec: capSpec("target_capacity: half\n"), wantErr: "target_capacity: must be a number"},
		{name: "config over the size limit", spec: capSpec("applications: []\n" + strings.Repeat("#", validation.MaxServeConfigV2Bytes)), wantErr: "bytes, over the"},
		{name: "negative worker replicas", spec: capSpec("", group("neg", ptr.To[int32](-1), nil, nil)), wantErr: `worker group "neg": negative count`},
		{name: "negative numOfHosts", spec: capSpec("", group("neg", nil, nil, nil, func(g *rayv1.WorkerGroupSpec) { g.NumOfHosts = -1 })), wantErr: "negative count"},
		{name: "worker group twice", spec: capSpec("", group("small", nil, nil, nil)), wantErr: `worker group "small" appears twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FullSet(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FullSet() = %+v, %v; want an error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FullSet() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("FullSet() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWorkerGroupFull(t *testing.T) {
	size := func(r, lo, hi int32) WorkerGroupSize {
		return WorkerGroupSize{Replicas: r, MinReplicas: lo, MaxReplicas: hi}
	}
	tests := []struct {
		name  string
		group WorkerGroup
		want  int32
	}{
		{name: "replicas", group: WorkerGroup{Size: size(3, 0, 5)}, want: 3},
		{name: "replicas below min: min, as KubeRay clamps", group: WorkerGroup{Size: size(1, 2, 5)}, want: 2},
		{name: "replicas above max: max", group: WorkerGroup{Size: size(9, 0, 5)}, want: 5},
		{name: "min above max: min, as KubeRay", group: WorkerGroup{Size: size(0, 4, 2)}, want: 4},
		{name: "suspended", group: WorkerGroup{Size: size(3, 1, 5), Suspended: true}, want: 0},
		{name: "autoscaling: its min", group: WorkerGroup{Size: size(4, 2, 5), Autoscaling: true}, want: 2},
		{name: "autoscaling from 0: nothing", group: WorkerGroup{Size: size(4, 0, 5), Autoscaling: true}, want: 0},
		{name: "autoscaling, min above max: max", group: WorkerGroup{Size: size(0, 4, 2), Autoscaling: true}, want: 2},
	}
	for _, tt := range tests {
		if got := tt.group.Full(); got != tt.want {
			t.Errorf("%s: Full() = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// The rows were checked against Ray 2.52's get_capacity_adjusted_num_replicas.
func TestServeReplicas(t *testing.T) {
	tests := []struct {
		n    int32
		tc   *float64
		want int32
	}{
		{n: 5, tc: nil, want: 5},
		{n: 5, tc: ptr.To(100.0), want: 5},
		{n: 5, tc: ptr.To(0.0), want: 0},
		{n: 0, tc: ptr.To(50.0), want: 0},
		{n: 3, tc: ptr.To(40.0), want: 1},  // 1.2: to nearest, not up
		{n: 3, tc: ptr.To(50.0), want: 2},  // 1.5: half up
		{n: 10, tc: ptr.To(25.0), want: 3}, // 2.5: half up, not to even
		{n: 10, tc: ptr.To(24.0), want: 2},
		{n: 1, tc: ptr.To(1.0), want: 1}, // never 0 above 0
		{n: 3, tc: ptr.To(33.3), want: 1},
		{n: 3, tc: ptr.To(16.7), want: 1},    // 0.501
		{n: 7, tc: ptr.To(50.0), want: 4},    // 3.5
		{n: 1000, tc: ptr.To(0.05), want: 1}, // 0.5
		{n: math.MaxInt32, tc: ptr.To(99.0), want: 2126008811},
	}
	for _, tt := range tests {
		if got := ServeReplicas(tt.n, tt.tc); got != tt.want {
			t.Errorf("ServeReplicas(%d, %v) = %d, want %d", tt.n, ptr.Deref(tt.tc, -1), got, tt.want)
		}
	}
}

func TestRunningShareOf(t *testing.T) {
	twoGroups := CapacitySet{Workers: map[string]WorkerGroup{
		"cpu": {Size: WorkerGroupSize{Replicas: 4, MaxReplicas: 8}, NumOfHosts: 1},
		"tpu": {Size: WorkerGroupSize{Replicas: 2, MaxReplicas: 2}, NumOfHosts: 4},
	}, Serve: map[string]ServeDeployment{"app/Model": fixed(3)}}
	many := runningreplicas.Replicas{Workers: map[string]int32{"cpu": 4, "tpu": 8}, Serve: map[string]int32{"app/Model": 3}}
	for i := range runningreplicas.MaxEntries - 3 {
		many.Serve[fmt.Sprintf("app/Other%d", i)] = 1
	}
	huge := CapacitySet{Workers: map[string]WorkerGroup{"big": {Size: WorkerGroupSize{Replicas: math.MaxInt32, MaxReplicas: math.MaxInt32}, NumOfHosts: 1}}}
	scaled := CapacitySet{Workers: map[string]WorkerGroup{}, TargetCapacity: ptr.To(50.0), Serve: map[string]ServeDeployment{"a/d": fixed(4)}}
	auto := CapacitySet{Autoscaling: true, Workers: map[string]WorkerGroup{
		"from0": {Size: WorkerGroupSize{Replicas: 3, MaxReplicas: 10}, NumOfHosts: 1, Autoscaling: true},
		"from2": {Size: WorkerGroupSize{Replicas: 3, MinReplicas: 2, MaxReplicas: 10}, NumOfHosts: 1, Autoscaling: true},
	}, Serve: map[string]ServeDeployment{"a/zero": {Autoscaling: true, MaxReplicas: 5}}}
	tests := []struct {
		name   string
		set    CapacitySet
		report runningreplicas.Replicas
		want   int32
	}{
		{name: "everything runs", set: twoGroups, report: runningreplicas.Replicas{Workers: map[string]int32{"cpu": 4, "tpu": 8}, Serve: map[string]int32{"app/Model": 3}}, want: 100},
		{name: "nothing reported", set: twoGroups, want: 0},
		{name: "the least group decides", set: twoGroups, report: runningreplicas.Replicas{Workers: map[string]int32{"cpu": 2, "tpu": 8}, Serve: map[string]int32{"app/Model": 3}}, want: 50},
		{name: "a multi-host replica counts once all its Pods run", set: twoGroups,
			report: runningreplicas.Replicas{Workers: map[string]int32{"cpu": 4, "tpu": 7}, Serve: map[string]int32{"app/Model": 3}}, want: 50},
		{name: "Serve replicas count as a group, rounded up", set: twoGroups,
			report: runningreplicas.Replicas{Workers: map[string]int32{"cpu": 4, "tpu": 8}, Serve: map[string]int32{"app/Model": 1}}, want: 34},
		{name: "more than the full set counts as the full set", set: twoGroups,
			report: runningreplicas.Replicas{Workers: map[string]int32{"cpu": 9, "tpu": 80}, Serve: map[string]int32{"app/Model": math.MaxInt32}}, want: 100},
		{name: "unknown groups and 1,000 deployments in the report are ignored", set: twoGroups,
			report: func() runningreplicas.Replicas {
				r := many
				r.Workers = map[string]int32{"cpu": 1, "tpu": 8, "gpu": 100}
				return r
			}(), want: 25},
		{name: "negative counts are none", set: twoGroups,
			report: runningreplicas.Replicas{Workers: map[string]int32{"cpu": -4, "tpu": 8}, Serve: map[string]int32{"app/Model": 3}}, want: 0},
		{name: "a huge group does not overflow", set: huge, report: runningreplicas.Replicas{Workers: map[string]int32{"big": math.MaxInt32}}, want: 100},
		{name: "half of a huge group", set: huge, report: runningreplicas.Replicas{Workers: map[string]int32{"big": math.MaxInt32 / 2}}, want: 50},
		{name: "the config's own target_capacity is the full set", set: scaled, report: runningreplicas.Replicas{Serve: map[string]int32{"a/d": 2}}, want: 100},
		{name: "autoscaling: min gates, a min of 0 does not", set: auto, report: runningreplicas.Replicas{Workers: map[string]int32{"from2": 1}}, want: 50},
		{name: "autoscaling at its min runs whole", set: auto, report: runningreplicas.Replicas{Workers: map[string]int32{"from2": 2}}, want: 100},
		{name: "nothing that gates: whole", set: CapacitySet{}, want: 100},
		{name: "suspended group does not gate", set: CapacitySet{Workers: map[string]WorkerGroup{"s": {Size: WorkerGroupSize{Replicas: 3, MaxReplicas: 3}, Suspended: true}},
			Serve: map[string]ServeDeployment{"a/d": fixed(2)}}, report: runningreplicas.Replicas{Serve: map[string]int32{"a/d": 2}}, want: 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RunningShareOf(tt.set, tt.report); got != tt.want {
				t.Errorf("RunningShareOf() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestServeTargetCapacity(t *testing.T) {
	set := func(tc *float64, ns ...int32) CapacitySet {
		s := CapacitySet{TargetCapacity: tc, Serve: map[string]ServeDeployment{"a/auto": {Autoscaling: true, MinReplicas: 1, MaxReplicas: 7}}}
		for i, n := range ns {
			s.Serve[fmt.Sprintf("a/d%d", i)] = fixed(n)
		}
		return s
	}
	tests := []struct {
		name     string
		set      CapacitySet
		capacity int32
		want     int32
	}{
		{name: "no fixed deployment: the capacity", set: set(nil), capacity: 37, want: 37},
		{name: "0 and 100", set: set(nil, 3), capacity: 0, want: 0},
		{name: "whole", set: set(nil, 3), capacity: 100, want: 100},
		{name: "3 at 33%: 1 replica, Ray's 0.99 rounds to it", set: set(nil, 3), capacity: 33, want: 33},
		{name: "3 at 34%: 2 replicas, which Ray gives from 50%", set: set(nil, 3), capacity: 34, want: 50},
		{name: "the most demanding deployment decides", set: set(nil, 10, 3), capacity: 34, want: 50},
		{name: "out of range is clamped", set: set(nil, 4), capacity: 130, want: 100},
		{name: "the config's own target_capacity scales", set: set(ptr.To(50.0), 4), capacity: 100, want: 50},
		{name: "half of the config's own half", set: set(ptr.To(50.0), 4), capacity: 50, want: 25},
	}
	for _, tt := range tests {
		if got := ServeTargetCapacity(tt.set, tt.capacity); got != tt.want {
			t.Errorf("%s: ServeTargetCapacity() = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// Whatever the sizes, the value carries at least the capacity, and no more than the capacity
// when Ray's rounding already gives enough there.
func TestServeTargetCapacityCarries(t *testing.T) {
	for n := int32(1); n <= 40; n++ {
		for capacity := int32(0); capacity <= 100; capacity++ {
			s := CapacitySet{Serve: map[string]ServeDeployment{"a/d": fixed(n)}}
			tc := ServeTargetCapacity(s, capacity)
			at, need := float64(tc), CarryReplicas(n, capacity)
			if got := ServeReplicas(n, &at); got < need || tc < capacity {
				t.Fatalf("n %d capacity %d: target_capacity %d gives %d replicas, need %d", n, capacity, tc, got, need)
			}
			if atCapacity := float64(capacity); ServeReplicas(n, &atCapacity) >= need && tc != capacity {
				t.Fatalf("n %d capacity %d: target_capacity %d, want the capacity itself", n, capacity, tc)
			}
		}
	}
}
