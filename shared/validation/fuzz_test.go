package validation

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/demand"
)

// maxSeedBytes keeps the seed corpus small: the fuzzer copies and mutates whole inputs, so the
// cases that are hostile by their size alone (a 1 MiB config, 10,000 groups) stay in the unit
// tables, where they run once.
const maxSeedBytes = 64 << 10

// FuzzRayServiceSpec decodes arbitrary JSON as a RayService and validates it as the hub and the
// spoke do. Whatever the input: no panic, the same answer twice, the RayService unchanged, an
// answer within hostileDeadline, an error that is an InvalidRayServiceError and never echoes a
// large serveConfigV2; and a RayService that passes is within every limit.
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
			f.Add(data)
		}
	}
	f.Add([]byte(`{"metadata":{"name":"a"},"spec":{"rayClusterConfig":{"workerGroupSpecs":[{"numOfHosts":-1}]}}}`))
	f.Add([]byte(`{"spec":{"serveConfigV2":"a: &a [*a]"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var rs rayv1.RayService
		if json.Unmarshal(data, &rs) != nil {
			return
		}
		before := rs.DeepCopy()
		start := time.Now()
		err := validateRayService(&rs)
		if took := time.Since(start); took > hostileDeadline {
			t.Fatalf("validation took %v", took)
		}
		if !reflect.DeepEqual(before, &rs) {
			t.Fatal("validation changed the RayService")
		}
		again := validateRayService(&rs)
		if (err == nil) != (again == nil) || (err != nil && err.Error() != again.Error()) {
			t.Fatalf("validation is not deterministic: %v, then %v", err, again)
		}
		if err != nil {
			checkRefusal(t, &rs, err)
			return
		}
		checkWithinLimits(t, &rs)
	})
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
