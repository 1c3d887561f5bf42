package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/demand"
)

// maxSeedBytes keeps the seed corpus small: the fuzzer copies, mutates and minimizes whole
// inputs, byte by byte, so the cases that are large by design (a 1 MiB config, 100 or 10,000
// groups) stay in the unit tables, and the fuzzer reaches the group limit through the plain
// arguments instead.
const maxSeedBytes = 16 << 10

// Bits of FuzzRayServiceSpec's apply argument: which of its plain arguments replace what the
// JSON (or the valid default RayService) says.
const (
	applyName uint8 = 1 << iota
	applyServeConfig
	applyCounts
	applyGroupCount
)

// maxFuzzGroups bounds the worker groups a fuzz input may ask for: past MaxWorkerGroups, and
// small enough that copying and comparing the groups does not slow every execution down (the
// unit tables try 10,000).
const maxFuzzGroups = 4 * MaxWorkerGroups

// FuzzRayServiceSpec validates arbitrary RayServices as the hub and the spoke do. The input is
// JSON decoded as a RayService (the valid default RayService when it does not decode), whose
// name, serveConfigV2, first worker group's counts and number of worker groups the plain
// arguments may replace (apply's bits say which), so that the fuzzer reaches the limits without
// having to write JSON. Whatever the input: no panic, the same answer twice, the RayService
// unchanged, an answer within hostileDeadline, an error that is an InvalidRayServiceError and
// never echoes a large serveConfigV2; and a RayService that passes is within every limit.
func FuzzRayServiceSpec(f *testing.F) {
	seeds := []*rayv1.RayService{rayService()}
	for _, tt := range hostileCases() {
		if tt.costly {
			continue
		}
		rs := rayService()
		tt.mutate(rs)
		seeds = append(seeds, rs)
	}
	for _, rs := range seeds {
		data, err := json.Marshal(rs)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) <= maxSeedBytes {
			f.Add(data, "", "", int32(0), int32(0), int32(0), int32(0), uint16(0), uint8(0))
		}
	}
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"rayClusterConfig":{"workerGroupSpecs":[{"numOfHosts":-1}]}}}`),
		"", "", int32(0), int32(0), int32(0), int32(0), uint16(0), uint8(0))
	all := applyName | applyServeConfig | applyCounts | applyGroupCount
	f.Add([]byte(nil), "svc", sampleServeConfig, int32(1), int32(0), int32(3), int32(1), uint16(1), all)
	f.Add([]byte(nil), strings.Repeat("a", 48), laughs(9, 10), int32(math.MaxInt32), int32(0), int32(math.MaxInt32), int32(2),
		uint16(MaxWorkerGroups+1), all)
	f.Add([]byte(nil), "Svc", "a: &a [*a]", int32(-1), int32(-1), int32(-1), int32(-1), uint16(MaxWorkerGroups), all)
	f.Add([]byte(nil), "", "", int32(50_000), int32(50_000), int32(50_000), int32(3), uint16(1), applyCounts)
	f.Fuzz(func(t *testing.T, data []byte, name, config string, replicas, minReplicas, maxReplicas, hosts int32,
		groups uint16, apply uint8,
	) {
		rs := fuzzRayService(data, name, config, [4]int32{replicas, minReplicas, maxReplicas, hosts}, groups, apply)
		before := rs.DeepCopy()
		start := time.Now()
		err := validateRayService(rs)
		if took := time.Since(start); took > hostileDeadline {
			t.Fatalf("validation took %v", took)
		}
		if !reflect.DeepEqual(before, rs) {
			t.Fatal("validation changed the RayService")
		}
		again := validateRayService(rs)
		if (err == nil) != (again == nil) || (err != nil && err.Error() != again.Error()) {
			t.Fatalf("validation is not deterministic: %v, then %v", err, again)
		}
		if err != nil {
			checkRefusal(t, rs, err)
			return
		}
		checkWithinLimits(t, rs)
	})
}

// fuzzRayService builds FuzzRayServiceSpec's RayService: data decoded (the valid default when it
// does not decode), then the plain arguments apply selects. counts are replicas, minReplicas,
// maxReplicas and numOfHosts of the first worker group.
func fuzzRayService(data []byte, name, config string, counts [4]int32, groups uint16, apply uint8) *rayv1.RayService {
	rs := &rayv1.RayService{}
	if json.Unmarshal(data, rs) != nil {
		rs = rayService()
	}
	if apply&applyName != 0 {
		rs.Name = name
	}
	if apply&applyServeConfig != 0 {
		rs.Spec.ServeConfigV2 = config
	}
	spec := &rs.Spec.RayClusterSpec
	if apply&applyGroupCount != 0 && len(spec.WorkerGroupSpecs) > 0 {
		n := min(int(groups), maxFuzzGroups)
		resized := make([]rayv1.WorkerGroupSpec, n)
		for i := range resized {
			resized[i] = *spec.WorkerGroupSpecs[i%len(spec.WorkerGroupSpecs)].DeepCopy()
			resized[i].GroupName = fmt.Sprintf("g%d", i)
		}
		spec.WorkerGroupSpecs = resized
	}
	if apply&applyCounts != 0 && len(spec.WorkerGroupSpecs) > 0 {
		g := &spec.WorkerGroupSpecs[0]
		g.Replicas, g.MinReplicas, g.MaxReplicas, g.NumOfHosts = &counts[0], &counts[1], &counts[2], counts[3]
	}
	return rs
}

// validateRayService runs the hub's and the spoke's checks: metadata, then spec.
func validateRayService(rs *rayv1.RayService) error {
	if err := RayServiceMetadata(rs.ObjectMeta); err != nil {
		return err
	}
	return RayServiceSpec(rs)
}

// checkRefusal checks what a refused RayService's error looks like.
func checkRefusal(t *testing.T, rs *rayv1.RayService, err error) {
	t.Helper()
	var invalid *InvalidRayServiceError
	if !errors.As(err, &invalid) || !strings.HasPrefix(err.Error(), "The RayService ") {
		t.Fatalf("error %q is not an InvalidRayServiceError", err)
	}
	if config := rs.Spec.ServeConfigV2; len(config) > 1<<10 && strings.Contains(err.Error(), config) {
		t.Fatal("the error echoes the whole serveConfigV2")
	}
}

// checkWithinLimits checks that a RayService that passed validation is within every limit.
func checkWithinLimits(t *testing.T, rs *rayv1.RayService) {
	t.Helper()
	if len(rs.Name) > MaxRayServiceNameLength {
		t.Fatalf("a %d-character name passed", len(rs.Name))
	}
	if len(rs.Spec.ServeConfigV2) > MaxServeConfigV2Bytes {
		t.Fatalf("a %d-byte serveConfigV2 passed", len(rs.Spec.ServeConfigV2))
	}
	if strings.TrimSpace(rs.Spec.ServeConfigV2) != "" {
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(rs.Spec.ServeConfigV2), &doc); err != nil || doc == nil {
			t.Fatalf("a serveConfigV2 that is not a YAML mapping passed: %v", err)
		}
	}
	groups := rs.Spec.RayClusterSpec.WorkerGroupSpecs
	if len(groups) > MaxWorkerGroups {
		t.Fatalf("%d worker groups passed", len(groups))
	}
	var total int64
	for i := range groups {
		g := &groups[i]
		for _, n := range []*int32{g.Replicas, g.MinReplicas, g.MaxReplicas, &g.NumOfHosts} {
			if n != nil && *n < 0 {
				t.Fatalf("worker group %q with a negative count passed", g.GroupName)
			}
		}
		// What the spoke creates, computed as the spoke does.
		total += int64(demand.WorkerGroupReplicas(g))
	}
	if total > MaxWorkerPods {
		t.Fatalf("%d worker Pods passed", total)
	}
}
