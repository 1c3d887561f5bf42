package rollout

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// serveConfigWithComments is a hand-written config: comments, a blank line, a flow mapping.
const serveConfigWithComments = `# fruit stand, owned by the store team
proxy_location: EveryNode

applications:
  - name: fruit  # the only one
    import_path: fruit.deployment_graph
    deployments:
      - name: MangoStand
        num_replicas: 3
        user_config: {price: 3}
`

func TestOverlayServeConfig(t *testing.T) {
	tests := []struct {
		name   string
		config string
		tc     int32
		want   string
		// reencoded: the edit could not follow the layout; want is then checked by decoding.
		reencoded bool
	}{
		{name: "added before the first key, the rest as written", config: serveConfigWithComments, tc: 40,
			want: strings.Replace(serveConfigWithComments, "proxy_location", "target_capacity: 40\nproxy_location", 1)},
		{name: "replaced in place, its comment kept", config: "applications: []\ntarget_capacity: 80   # set by hand\nproxy_location: EveryNode\n", tc: 5,
			want: "applications: []\ntarget_capacity: 5   # set by hand\nproxy_location: EveryNode\n"},
		{name: "a fractional or null value replaced", config: "target_capacity: 33.3\napplications: []\n", tc: 34,
			want: "target_capacity: 34\napplications: []\n"},
		{name: "null replaced", config: "target_capacity:\napplications: []\n", tc: 0, want: "target_capacity: 0\napplications: []\n"},
		{name: "quoted key", config: "\"target_capacity\" : 10\napplications: []\n", tc: 20, want: "\"target_capacity\" : 20\napplications: []\n"},
		{name: "a nested target_capacity is not the top-level one", config: "applications:\n- name: a\n  target_capacity: 3\n", tc: 50,
			want: "target_capacity: 50\napplications:\n- name: a\n  target_capacity: 3\n"},
		{name: "after a document start and a directive", config: "%YAML 1.1\n---\n# c\napplications: []\n", tc: 7,
			want: "%YAML 1.1\n---\n# c\ntarget_capacity: 7\napplications: []\n"},
		{name: "an indented top level", config: "  applications: []\n  proxy_location: EveryNode\n", tc: 60,
			want: "  target_capacity: 60\n  applications: []\n  proxy_location: EveryNode\n"},
		{name: "CRLF line ends kept", config: "applications: []\r\nproxy_location: EveryNode\r\n", tc: 60,
			want: "target_capacity: 60\r\napplications: []\r\nproxy_location: EveryNode\r\n"},
		{name: "no final newline", config: "applications: []", tc: 1, want: "target_capacity: 1\napplications: []"},
		{name: "a flow mapping is re-encoded", config: `{"applications": [{"name": "a", "import_path": "m:app"}]}`, tc: 25,
			want: "applications:\n- import_path: m:app\n  name: a\ntarget_capacity: 25\n", reencoded: true},
		{name: "a value on its own line is re-encoded", config: "target_capacity:\n  90\napplications: []\n", tc: 25,
			want: "applications: []\ntarget_capacity: 25\n", reencoded: true},
		{name: "a blank config stays blank", config: "  \n", tc: 30, want: "  \n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := capSpec(tt.config)
			set, err := FullSet(spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Overlay(spec, set, nil, tt.tc)
			if err != nil {
				t.Fatalf("Overlay() error = %v", err)
			}
			if diff := cmp.Diff(tt.want, got.ServeConfigV2); diff != "" {
				t.Errorf("serveConfigV2 (-want +got):\n%s", diff)
			}
			if strings.TrimSpace(tt.config) != "" {
				want, _ := decodeConfig(tt.config)
				want[targetCapacityKey] = float64(tt.tc)
				if !decodesTo(got.ServeConfigV2, want) {
					t.Errorf("serveConfigV2 does not read as the config with target_capacity %d", tt.tc)
				}
			}
			if spec.ServeConfigV2 != tt.config {
				t.Errorf("Overlay modified its input's config")
			}
			again, err := Overlay(got, set, nil, tt.tc)
			if err != nil || again.ServeConfigV2 != got.ServeConfigV2 {
				t.Errorf("overlaid twice: %q, %v; want %q", again.ServeConfigV2, err, got.ServeConfigV2)
			}
		})
	}
}

func TestOverlayWorkers(t *testing.T) {
	// small: 1 (0..5); big: 6 (2..8); plain: no counts set; other: 4 (0..4), left alone.
	spec := capSpec(raybuilder.RayServiceServeConfig,
		group("big", ptr.To[int32](6), ptr.To[int32](2), ptr.To[int32](8)),
		group("plain", nil, nil, nil),
		group("other", ptr.To[int32](4), ptr.To[int32](0), ptr.To[int32](4)))
	set, err := FullSet(spec)
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ Replicas, MinReplicas, MaxReplicas *int32 }
	read := func(s *rayv1.RayServiceSpec) map[string]counts {
		out := map[string]counts{}
		for _, g := range s.RayClusterSpec.WorkerGroupSpecs {
			out[g.GroupName] = counts{g.Replicas, g.MinReplicas, g.MaxReplicas}
		}
		return out
	}
	p := ptr.To[int32]
	before := spec.DeepCopy()
	got, err := Overlay(spec, set, map[string]int32{"small": 0, "big": 3, "plain": 2}, 30)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]counts{
		"small": {p(0), p(0), p(0)},
		"big":   {p(3), p(2), p(3)},
		"plain": {nil, nil, p(2)}, // replicas and min stay unset: their defaults are within the limit
		"other": {p(4), p(0), p(4)},
	}
	if diff := cmp.Diff(want, read(got)); diff != "" {
		t.Errorf("worker counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, spec); diff != "" {
		t.Errorf("Overlay modified its input (-before +after):\n%s", diff)
	}
	// The limits come from the full set: an overlaid spec grows again.
	grown, err := Overlay(got, set, map[string]int32{"small": 5, "big": 7, "plain": math.MaxInt32}, 100)
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]counts{
		"small": {p(1), p(0), p(5)},
		"big":   {p(6), p(2), p(7)},
		"plain": {nil, nil, p(math.MaxInt32)},
		"other": {p(4), p(0), p(4)},
	}
	if diff := cmp.Diff(want, read(grown)); diff != "" {
		t.Errorf("grown worker counts (-want +got):\n%s", diff)
	}
}

func TestOverlayRefuses(t *testing.T) {
	spec := capSpec(raybuilder.RayServiceServeConfig)
	set, err := FullSet(spec)
	if err != nil {
		t.Fatal(err)
	}
	otherSet := CapacitySet{Workers: map[string]WorkerGroup{"gpu": {Size: WorkerGroupSize{Replicas: 1, MaxReplicas: 1}}}}
	tests := []struct {
		name     string
		spec     *rayv1.RayServiceSpec
		set      CapacitySet
		replicas map[string]int32
		tc       int32
		wantErr  string
	}{
		{name: "nil spec", spec: nil, set: set, wantErr: "no RayService spec"},
		{name: "target_capacity over 100", spec: spec, set: set, tc: 101, wantErr: "target_capacity 101 is not a percent"},
		{name: "negative target_capacity", spec: spec, set: set, tc: -1, wantErr: "target_capacity -1"},
		{name: "negative limit", spec: spec, set: set, replicas: map[string]int32{"small": -2}, wantErr: `"small": negative limit -2`},
		{name: "a group the spec lacks", spec: spec, set: set, replicas: map[string]int32{"gpu": 1}, wantErr: `"gpu" is not in both`},
		{name: "a group the set lacks", spec: spec, set: otherSet, replicas: map[string]int32{"small": 1}, wantErr: `"small" is not in both`},
		{name: "bad YAML", spec: capSpec("applications: [\n"), set: set, wantErr: "serveConfigV2: not valid YAML"},
		{name: "not a mapping", spec: capSpec("just text\n"), set: set, wantErr: "not a YAML mapping"},
		{name: "too large once edited", spec: capSpec("applications: []\n" + strings.Repeat("#", validation.MaxServeConfigV2Bytes-len("applications: []\n"))),
			set: set, tc: 50, wantErr: "bytes, over the"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := Overlay(tt.spec, tt.set, tt.replicas, tt.tc); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Overlay() = %v, %v; want an error containing %q", got, err, tt.wantErr)
			}
		})
	}
}

// overlayConfigs are the layouts the property test draws from.
var overlayConfigs = []string{
	"",
	raybuilder.RayServiceServeConfig,
	serveConfigWithComments,
	"target_capacity: 70\n" + raybuilder.RayServiceServeConfig,
	`{"applications": []}`,
	"target_capacity:\n  90\napplications: []\n",
}

// For any spec, limits and target capacity: no limited group's counts exceed its limit, nothing
// else changes, the input is untouched, and overlaying twice is overlaying once.
func TestOverlayProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(34, 2))
	count := func() *int32 {
		if rng.IntN(4) == 0 {
			return nil
		}
		return ptr.To(rng.Int32N(12))
	}
	for i := range 500 {
		spec := capSpec(overlayConfigs[rng.IntN(len(overlayConfigs))])
		first := &spec.RayClusterSpec.WorkerGroupSpecs[0]
		first.Replicas, first.MinReplicas, first.MaxReplicas = count(), count(), count()
		for _, name := range []string{"b", "c", "d"}[:rng.IntN(4)] {
			group(name, count(), count(), count())(spec)
		}
		limits := map[string]int32{}
		for _, g := range spec.RayClusterSpec.WorkerGroupSpecs {
			if rng.IntN(3) > 0 {
				limits[g.GroupName] = rng.Int32N(14)
			}
		}
		if rng.IntN(2) == 0 {
			autoscaling(spec)
		}
		tc := rng.Int32N(101)
		set, err := FullSet(spec)
		if err != nil {
			t.Fatalf("case %d: FullSet: %v", i, err)
		}
		before := spec.DeepCopy()
		once, err := Overlay(spec, set, limits, tc)
		if err != nil {
			t.Fatalf("case %d: Overlay: %v", i, err)
		}
		if diff := cmp.Diff(before, spec); diff != "" {
			t.Fatalf("case %d: input modified:\n%s", i, diff)
		}
		for j, g := range once.RayClusterSpec.WorkerGroupSpecs {
			orig := before.RayClusterSpec.WorkerGroupSpecs[j]
			limit, limited := limits[g.GroupName]
			if !limited {
				if diff := cmp.Diff(orig, g); diff != "" {
					t.Fatalf("case %d: group %s without a limit changed:\n%s", i, g.GroupName, diff)
				}
				continue
			}
			full := set.Workers[g.GroupName].Size
			effective := WorkerGroupSize{ptr.Deref(g.Replicas, 0), ptr.Deref(g.MinReplicas, 0), ptr.Deref(g.MaxReplicas, math.MaxInt32)}
			if effective.Replicas > limit || effective.MinReplicas > limit || effective.MaxReplicas > limit {
				t.Fatalf("case %d: group %s limited to %d has %+v", i, g.GroupName, limit, effective)
			}
			if effective.MaxReplicas != min(full.MaxReplicas, limit) || effective.MinReplicas != min(full.MinReplicas, limit) {
				t.Fatalf("case %d: group %s of %+v limited to %d has %+v", i, g.GroupName, full, limit, effective)
			}
			g.Replicas, g.MinReplicas, g.MaxReplicas = orig.Replicas, orig.MinReplicas, orig.MaxReplicas
			if diff := cmp.Diff(orig, g); diff != "" {
				t.Fatalf("case %d: group %s changed beyond its counts:\n%s", i, g.GroupName, diff)
			}
		}
		twice, err := Overlay(once, set, limits, tc)
		if err != nil {
			t.Fatalf("case %d: second Overlay: %v", i, err)
		}
		if diff := cmp.Diff(once, twice); diff != "" {
			t.Fatalf("case %d: overlaying twice differs from once:\n%s", i, diff)
		}
	}
}

// FuzzOverlayConfig: no config panics the edit, and an accepted one reads back as the config
// with target_capacity set, once or twice.
func FuzzOverlayConfig(f *testing.F) {
	for _, s := range overlayConfigs {
		f.Add(s, int32(40))
	}
	f.Add("a: |\n  target_capacity: 1\ntarget_capacity: 2\n", int32(3))
	f.Fuzz(func(t *testing.T, config string, tc int32) {
		tc = percent(tc)
		out, err := withTargetCapacity(config, tc)
		if err != nil {
			return
		}
		if strings.TrimSpace(config) == "" {
			if out != config {
				t.Fatalf("a blank config became %q", out)
			}
			return
		}
		want, err := decodeConfig(config)
		if err != nil {
			t.Fatalf("accepted a config that does not decode: %v", err)
		}
		want[targetCapacityKey] = float64(tc)
		if !decodesTo(out, want) {
			t.Fatalf("%q became %q", config, out)
		}
		if again, err := withTargetCapacity(out, tc); err != nil || again != out {
			t.Fatalf("twice: %q, %v; once %q", again, err, out)
		}
	})
}
