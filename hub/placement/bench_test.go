package placement

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
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

// BenchmarkReservationsPlan plans one RayService more (snapshot, plan, record) while 10,000
// placed in the last seconds are still reserved on 100 members: the cost must not grow with them.
func BenchmarkReservationsPlan(b *testing.B) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	fleet := make([]Member, 0, 100)
	for i := range 100 {
		fleet = append(fleet, member(fmt.Sprintf("member-%03d", i), "cpu", "100000", "memory", "1000Ti").obj())
	}
	in := Input{Demand: rl("cpu", "2", "memory", "4Gi"), Policy: Policy{Clusters: 2}, Members: fleet, Now: now}
	r := NewReservations()
	for i := range 10000 {
		plan(r, types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("rs-", i)}, in)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "one-more"}
	b.ReportAllocs()
	for b.Loop() {
		if d := plan(r, key, in); !d.Placed {
			b.Fatalf("not placed: %s", d.Message)
		}
	}
}
