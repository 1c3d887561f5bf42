package validation

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// hostileDeadline is how long validating any one hostile spec may take. The slowest case, a
// serveConfigV2 at the size limit, takes well under a second even with the race detector on; a
// case that exceeds this is parsing or walking something it should have refused first.
const hostileDeadline = 5 * time.Second

// hostileCase is a RayService spec nobody should write: mutate edits a valid RayService, want is
// part of the error message (the field and what is wrong with it), "" when the spec is valid
// (the cases at a limit).
type hostileCase struct {
	name   string
	mutate func(rs *rayv1.RayService)
	want   string
	// costly cases take tenths of a second to validate, by design: the fuzz targets leave them
	// out of their seeds, where every mutation of them would cost as much.
	costly bool
}

// workers edits the RayService's first worker group.
func workers(change func(g *rayv1.WorkerGroupSpec)) func(rs *rayv1.RayService) {
	return func(rs *rayv1.RayService) { change(&rs.Spec.RayClusterSpec.WorkerGroupSpecs[0]) }
}

// withGroups gives the RayService n copies of its first worker group, uniquely named.
func withGroups(n int) func(rs *rayv1.RayService) {
	return func(rs *rayv1.RayService) {
		spec := &rs.Spec.RayClusterSpec
		first := spec.WorkerGroupSpecs[0]
		spec.WorkerGroupSpecs = make([]rayv1.WorkerGroupSpec, n)
		for i := range spec.WorkerGroupSpecs {
			spec.WorkerGroupSpecs[i] = *first.DeepCopy()
			spec.WorkerGroupSpecs[i].GroupName = fmt.Sprintf("g%d", i)
		}
	}
}

// serveConfigOf sets serveConfigV2.
func serveConfigOf(config string) func(rs *rayv1.RayService) {
	return func(rs *rayv1.RayService) { rs.Spec.ServeConfigV2 = config }
}

// sizedServeConfig is a valid Serve config of exactly size bytes: applications, then a comment
// to make up the rest.
func sizedServeConfig(size int) string {
	config := largeServeConfig(size - 300)
	pad := size - len(config) - len("#\n")
	return config + "#" + strings.Repeat("x", pad) + "\n"
}

// laughs is the "billion laughs" YAML bomb: levels of anchors, each a list of width aliases of
// the one before, so that the last one names width^levels strings in a few hundred bytes.
func laughs(levels, width int) string {
	var b strings.Builder
	b.WriteString("lol0: &lol0 [\"lol\"]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "lol%d: &lol%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*lol%d,", i-1), width), ","))
	}
	return b.String()
}

// wideAliases is the largest expansion the YAML parser allows: a list of base scalars, then a
// list of aliases of it; the parser lets a document be up to 99% expanded aliases while it is
// small, so a few KiB become hundreds of thousands of values.
func wideAliases(base, copies int) string {
	return "applications: []\nbase: &base [" + strings.TrimSuffix(strings.Repeat("x,", base), ",") + "]\n" +
		"copies: [" + strings.TrimSuffix(strings.Repeat("*base,", copies), ",") + "]\n"
}

// hostileCases are the inputs of issue 12's list, each at and past its limit.
func hostileCases() []hostileCase {
	p := ptr.To[int32]
	maxInt32 := int32(math.MaxInt32)
	const group = `worker group "g"`
	return []hostileCase{
		// serveConfigV2: size, syntax and anchors.
		{name: "serveConfigV2 at the size limit", mutate: serveConfigOf(sizedServeConfig(MaxServeConfigV2Bytes))},
		{
			name:   "serveConfigV2 one byte over the size limit",
			mutate: serveConfigOf(sizedServeConfig(MaxServeConfigV2Bytes + 1)),
			want:   "spec.serveConfigV2: Too long: is 524289 bytes; a serveConfigV2 may have at most 524288 (512 KiB)",
		},
		{
			name:   "serveConfigV2 of 1 MiB",
			mutate: serveConfigOf(largeServeConfig(1 << 20)),
			want:   "spec.serveConfigV2: Too long: is 1048",
		},
		{
			// Refused by its size alone: it is never parsed.
			name:   "1 MiB of unparseable bytes",
			mutate: serveConfigOf("applications: [" + strings.Repeat("{[", 1<<19)),
			want:   "spec.serveConfigV2: Too long: is 1048591 bytes",
		},
		{
			name:   "malformed serveConfigV2",
			mutate: serveConfigOf("applications:\n  - name: a\n   route_prefix: /a\n"),
			want:   "spec.serveConfigV2: Invalid value: is not valid YAML: yaml: line 2: did not find expected '-' indicator",
		},
		{
			name:   "billion laughs",
			mutate: serveConfigOf(laughs(9, 10)),
			want:   "spec.serveConfigV2: Invalid value: is not valid YAML: yaml: document contains excessive aliasing",
		},
		{
			name:   "billion laughs inside applications",
			mutate: serveConfigOf(laughs(9, 10) + "applications: [*lol9]\n"),
			want:   "document contains excessive aliasing",
		},
		{
			name:   "wide aliases past the parser's ratio",
			mutate: serveConfigOf(wideAliases(1000, 1000)),
			want:   "document contains excessive aliasing",
		},
		// The most the parser expands: allowed, and bounded (see TestServeConfigBombIsCheap).
		{name: "wide aliases within the parser's ratio", mutate: serveConfigOf(wideAliases(4000, 98)), costly: true},

		// Replica counts.
		{
			name:   "negative minReplicas",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) { g.MinReplicas = p(-1) }),
			want:   "spec.rayClusterConfig.workerGroupSpecs[0].minReplicas: Invalid value: -1: " + group + ": must not be negative",
		},
		{
			name:   "negative maxReplicas",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) { g.MinReplicas, g.MaxReplicas = p(0), p(-5) }),
			want:   "spec.rayClusterConfig.workerGroupSpecs[0].maxReplicas: Invalid value: -5: " + group + ": must not be negative",
		},
		{
			name:   "negative replicas",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) { g.Replicas = p(math.MinInt32) }),
			want:   "spec.rayClusterConfig.workerGroupSpecs[0].replicas: Invalid value: -2147483648: " + group + ": must not be negative",
		},
		{
			name:   "negative numOfHosts",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) { g.NumOfHosts = -3 }),
			want:   "spec.rayClusterConfig.workerGroupSpecs[0].numOfHosts: Invalid value: -3: " + group + ": must not be negative",
		},
		{
			name: "replicas of 2^31-1",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) {
				g.Replicas, g.MinReplicas, g.MaxReplicas = p(maxInt32), p(0), p(maxInt32)
			}),
			want: "spec.rayClusterConfig.workerGroupSpecs[0].replicas: Invalid value: 2147483647: " + group +
				": asks for 2147483647 worker Pods (replicas clamped to [minReplicas, maxReplicas], times numOfHosts 1); " +
				"a RayCluster may ask for at most 150000",
		},
		{
			// 4 × 2^30 does not fit in an int32: the message has the real product.
			name: "replicas times numOfHosts overflows int32",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) {
				g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = p(4), p(0), p(4), 1<<30
			}),
			want: "workerGroupSpecs[0].replicas: Invalid value: 4: " + group + ": asks for 4294967296 worker Pods",
		},
		{
			name: "minReplicas sets the count when replicas is unset",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) {
				g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = nil, p(100_000), p(100_000), 2
			}),
			want: "workerGroupSpecs[0].minReplicas: Invalid value: 100000: " + group + ": asks for 200000 worker Pods",
		},
		{
			name: "replicas above maxReplicas counts as maxReplicas",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) {
				g.Replicas, g.MinReplicas, g.MaxReplicas = p(maxInt32), p(0), p(MaxWorkerPods)
			}),
		},
		{
			name: "maxReplicas of 2^31-1 (KubeRay's default) is no request",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) {
				g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = p(1), p(1), p(maxInt32), 8
			}),
		},
		{
			name: "a suspended group asks for nothing",
			mutate: workers(func(g *rayv1.WorkerGroupSpec) {
				g.Replicas, g.MinReplicas, g.MaxReplicas, g.Suspend = p(maxInt32), p(maxInt32), p(maxInt32), ptr.To(true)
			}),
		},
		{
			name: "groups together at the Pod limit",
			mutate: func(rs *rayv1.RayService) {
				withGroups(3)(rs)
				for i := range rs.Spec.RayClusterSpec.WorkerGroupSpecs {
					g := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[i]
					g.Replicas, g.MinReplicas, g.MaxReplicas = p(MaxWorkerPods/3), p(0), p(maxInt32)
				}
			},
		},
		{
			name: "groups together over the Pod limit",
			mutate: func(rs *rayv1.RayService) {
				withGroups(3)(rs)
				for i := range rs.Spec.RayClusterSpec.WorkerGroupSpecs {
					g := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[i]
					g.Replicas, g.MinReplicas, g.MaxReplicas = p(MaxWorkerPods/3+1), p(0), p(maxInt32)
				}
			},
			want: "spec.rayClusterConfig.workerGroupSpecs: Invalid value: 150003: the worker groups together ask for 150003 worker Pods; " +
				"a RayCluster may ask for at most 150000",
		},

		// Worker group count.
		{name: "worker groups at the limit", mutate: withGroups(MaxWorkerGroups)},
		{
			name:   "one worker group over the limit",
			mutate: withGroups(MaxWorkerGroups + 1),
			want:   "spec.rayClusterConfig.workerGroupSpecs: Too many: 101: a RayCluster may have at most 100 worker groups",
		},
		{
			name:   "10,000 worker groups",
			mutate: withGroups(10_000),
			want:   "spec.rayClusterConfig.workerGroupSpecs: Too many: 10000: a RayCluster may have at most 100 worker groups",
		},
		{
			// The count is checked before any group: the first group's own error is not reached.
			name: "10,000 worker groups, all broken",
			mutate: func(rs *rayv1.RayService) {
				workers(func(g *rayv1.WorkerGroupSpec) { g.MinReplicas = p(-1) })(rs)
				withGroups(10_000)(rs)
			},
			want: "Too many: 10000",
		},
	}
}

func TestHostileRayServiceSpecs(t *testing.T) {
	for _, tt := range hostileCases() {
		t.Run(tt.name, func(t *testing.T) {
			rs := rayService()
			tt.mutate(rs)
			before := rs.DeepCopy()
			start := time.Now()
			err := RayServiceSpec(rs)
			if took := time.Since(start); took > hostileDeadline {
				t.Errorf("validation took %v, want under %v", took, hostileDeadline)
			}
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Errorf("no error, want one containing %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("wrong error\n got: %s\nwant it to contain: %s", err, tt.want)
			case err != nil && len(err.Error()) > 4<<10:
				// The message goes into a condition and an event: never the config itself.
				t.Errorf("error message is %d bytes long", len(err.Error()))
			}
			if !reflect.DeepEqual(before, rs) {
				t.Error("RayServiceSpec changed the RayService")
			}
		})
	}
}

// TestHostileRayClusterSpecs runs the replica and group cases on a RayCluster: the spoke's
// RayCluster reconciler validates with RayClusterSpec, and reports the same fields under spec.
func TestHostileRayClusterSpecs(t *testing.T) {
	for _, tt := range hostileCases() {
		if strings.Contains(tt.name, "serveConfigV2") || strings.Contains(tt.name, "laughs") || strings.Contains(tt.name, "aliases") ||
			strings.Contains(tt.name, "unparseable") {
			continue // a RayCluster has no Serve config
		}
		t.Run(tt.name, func(t *testing.T) {
			rs := rayService()
			tt.mutate(rs)
			err := RayClusterSpec(&rs.Spec.RayClusterSpec, nil)
			want := strings.ReplaceAll(tt.want, "spec.rayClusterConfig.", "spec.")
			switch {
			case want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("RayClusterSpec = %v, want an error containing %q", err, want)
			}
		})
	}
}

// TestHostileNames checks names around KubeRay's limits (RayService 47, RayCluster 53; a
// Service name is a 63-character DNS label) on both kinds.
func TestHostileNames(t *testing.T) {
	tests := []struct {
		length                  int
		rayServiceOK, clusterOK bool
	}{
		{length: 47, rayServiceOK: true, clusterOK: true},
		{length: 48, clusterOK: true},
		{length: 53, clusterOK: true},
		{length: 54},
		{length: 63},
		{length: 64},
		{length: 253},
	}
	for _, tt := range tests {
		name := strings.Repeat("a", tt.length)
		t.Run(fmt.Sprint(tt.length), func(t *testing.T) {
			err := RayServiceMetadata(metav1.ObjectMeta{Name: name})
			if (err == nil) != tt.rayServiceOK {
				t.Errorf("RayServiceMetadata(%d characters) = %v, want ok=%v", tt.length, err, tt.rayServiceOK)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("must be no more than 47 characters (got %d)", tt.length)) {
				t.Errorf("RayServiceMetadata error %q does not give the limit and the length", err)
			}
			err = RayClusterMetadata(metav1.ObjectMeta{Name: name})
			if (err == nil) != tt.clusterOK {
				t.Errorf("RayClusterMetadata(%d characters) = %v, want ok=%v", tt.length, err, tt.clusterOK)
			}
			if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("must be no more than 53 characters (got %d)", tt.length)) {
				t.Errorf("RayClusterMetadata error %q does not give the limit and the length", err)
			}
		})
	}
}

// TestServeConfigBombIsCheap measures what the worst Serve configs cost to validate: the
// billion laughs fails at once, and the largest expansion the parser allows, at the size
// limit, stays far from gigabytes.
func TestServeConfigBombIsCheap(t *testing.T) {
	tests := []struct {
		name     string
		config   string
		maxBytes uint64
		wantErr  bool
	}{
		{name: "billion laughs", config: laughs(9, 10), maxBytes: 1 << 20, wantErr: true},
		{name: "a thousand laughs per level", config: laughs(4, 1000), maxBytes: 64 << 20, wantErr: true},
		{name: "wide aliases at the parser's ratio", config: wideAliases(4000, 98), maxBytes: 256 << 20},
		// 250,000 scalars (500 KB) aliased three times: about the most a config within the
		// size limit can make the parser build.
		{name: "wide aliases at the size limit", config: wideAliases(250_000, 3), maxBytes: 1 << 30},
		{name: "1 MiB bomb is refused unparsed", config: laughs(9, 10) + "#" + strings.Repeat("x", 1<<20), maxBytes: 1 << 20, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if len(tt.config) > MaxServeConfigV2Bytes && !tt.wantErr {
				t.Fatalf("the case is %d bytes, over the limit", len(tt.config))
			}
			rs := rayService()
			rs.Spec.ServeConfigV2 = tt.config
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := RayServiceSpec(rs)
			runtime.ReadMemStats(&after)
			if (err != nil) != tt.wantErr {
				t.Errorf("RayServiceSpec = %v, want error %v", err, tt.wantErr)
			}
			allocated := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes of config: %d KiB allocated", len(tt.config), allocated>>10)
			if allocated > tt.maxBytes {
				t.Errorf("validation allocated %d MiB, want at most %d MiB", allocated>>20, tt.maxBytes>>20)
			}
		})
	}
}
