package placement

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
)

// BenchmarkPlan plans a two-cluster, region-spread GPU RayService over 100 members, some not
// ready, some tainted, some short of GPUs, one of them current.
func BenchmarkPlan(b *testing.B) {
	regions := []string{"eu", "us", "ap", "sa"}
	fleet := make([]Member, 0, 100)
	for i := range 100 {
		w := member(fmt.Sprintf("member-%03d", i),
			"cpu", fmt.Sprint(32+i%5*16), "memory", fmt.Sprintf("%dGi", 128+i%3*64), "nvidia.com/gpu", fmt.Sprint(i%9)).
			region(regions[i%4]).label("tier", "prod")
		switch i % 10 {
		case 3:
			w.notReady("heartbeat 2m old")
		case 7:
			w.taint("spot", "", "PreferNoSchedule")
		}
		fleet = append(fleet, w.obj())
	}
	in := Input{
		Demand:  rl("cpu", "8", "memory", "32Gi", "nvidia.com/gpu", "4"),
		Policy:  Policy{Clusters: 2, SpreadBy: "region", Selector: labels.SelectorFromSet(labels.Set{"tier": "prod"})},
		Members: fleet,
		Current: []string{"member-005"},
	}
	b.ReportAllocs()
	for b.Loop() {
		if d := Plan(in); !d.Placed {
			b.Fatalf("not placed: %s", d.Message)
		}
	}
}
