package placement

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

func cpu(n string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n)}
}

// twoMembers are equal members with room for one 6-CPU copy each, as last reported at
// reportedA and reportedB.
func twoMembers(reportedA, reportedB time.Time) []Member {
	return []Member{
		{Name: "a", Ready: true, Free: cpu("8"), ReportedAt: reportedA},
		{Name: "b", Ready: true, Free: cpu("8"), ReportedAt: reportedB},
	}
}

func TestReservationsSpreadABurst(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	reported := map[string]time.Time{"a": t0.Add(-5 * time.Second), "b": t0.Add(-5 * time.Second)}
	// in is the input at now with the members' reports taken at reportedAt.
	in := func(reportedAt map[string]time.Time, now time.Time, current ...string) Input {
		return Input{Demand: cpu("6"), Policy: Policy{Clusters: 1}, Members: twoMembers(reportedAt["a"], reportedAt["b"]),
			Current: current, Now: now}
	}
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }

	tests := []struct {
		name string
		// steps are plans in order; want is the cluster each one chooses ("" for none).
		steps []func(r *Reservations) Decision
		want  []string
	}{{
		name: "two RayServices planned on the same stale report land on different members",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return r.Plan(key("x"), in(reported, t0)) },
			func(r *Reservations) Decision { return r.Plan(key("y"), in(reported, t0.Add(time.Second))) },
		},
		want: []string{"a", "b"},
	}, {
		name: "a third finds no room while the first two are reserved",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return r.Plan(key("x"), in(reported, t0)) },
			func(r *Reservations) Decision { return r.Plan(key("y"), in(reported, t0)) },
			func(r *Reservations) Decision { return r.Plan(key("z"), in(reported, t0)) },
		},
		want: []string{"a", "b", ""},
	}, {
		name: "a RayService's own reservation does not push it off its member on the next plan",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return r.Plan(key("x"), in(reported, t0)) },
			func(r *Reservations) Decision {
				return r.Plan(key("x"), in(reported, t0.Add(time.Second), "a"))
			},
		},
		want: []string{"a", "a"},
	}, {
		name: "a report taken after the settle time counts the copy itself, so the reservation stops",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return r.Plan(key("x"), in(reported, t0)) },
			// The new report (here still showing 8 free: the member is what it says) is later
			// than placement + settle, so only the report counts.
			func(r *Reservations) Decision {
				late := map[string]time.Time{"a": t0.Add(reservationSettle + time.Second), "b": reported["b"]}
				return r.Plan(key("y"), in(late, t0.Add(reservationSettle+2*time.Second)))
			},
		},
		want: []string{"a", "a"},
	}, {
		name: "without any new report, a reservation ends after its TTL",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return r.Plan(key("x"), in(reported, t0)) },
			func(r *Reservations) Decision {
				return r.Plan(key("y"), in(reported, t0.Add(reservationTTL+time.Second)))
			},
		},
		want: []string{"a", "a"},
	}, {
		name: "a deleted RayService's reservation is forgotten",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return r.Plan(key("x"), in(reported, t0)) },
			func(r *Reservations) Decision {
				r.Forget(key("x"))
				return Decision{Clusters: []string{"-"}}
			},
			func(r *Reservations) Decision { return r.Plan(key("y"), in(reported, t0)) },
		},
		want: []string{"a", "-", "a"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReservations()
			for i, step := range tt.steps {
				d := step(r)
				got := ""
				if len(d.Clusters) > 0 {
					got = d.Clusters[0]
				}
				if got != tt.want[i] {
					t.Errorf("step %d chose %q (%s), want %q", i, got, d.Message, tt.want[i])
				}
			}
		})
	}
}

func TestReservationsFree(t *testing.T) {
	r := NewReservations()
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	self := types.NamespacedName{Namespace: "ns", Name: "self"}
	a := &memberReservations{byKey: map[types.NamespacedName]reservation{}, total: corev1.ResourceList{}}
	a.add(other, reservation{demand: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6"), "nvidia.com/gpu": resource.MustParse("2")}, seq: 1})
	a.add(self, reservation{demand: cpu("1"), seq: 2})
	r.byMember["a"] = a
	tests := []struct {
		name   string
		member string
		free   corev1.ResourceList
		want   corev1.ResourceList
	}{
		{name: "others' demand subtracted, own ignored", member: "a", free: cpu("8"), want: cpu("2")},
		{name: "never below zero, absent resources stay absent", member: "a", free: cpu("4"), want: cpu("0")},
		{name: "no reservations on the member", member: "b", free: cpu("8"), want: cpu("8")},
		{name: "no capacity reported", member: "a", free: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.free(tt.member, self, tt.free)
			if len(got) != len(tt.want) {
				t.Fatalf("free = %v, want %v", got, tt.want)
			}
			for name, q := range tt.want {
				if g := got[name]; g.Cmp(q) != 0 {
					t.Errorf("free[%s] = %s, want %s", name, g.String(), q.String())
				}
			}
		})
	}
}

func TestReservationsTotals(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "ns", Name: fmt.Sprint("rs-", i)}
	}
	r := NewReservations()
	big := []Member{{Name: "a", Ready: true, Free: cpu("1000"), ReportedAt: t0}}
	in := func(now time.Time, reportedAt time.Time) Input {
		members := slices.Clone(big)
		members[0].ReportedAt = reportedAt
		return Input{Demand: cpu("2"), Policy: Policy{Clusters: 1}, Members: members, Now: now}
	}
	// 100 RayServices placed one second apart on a report taken at t0.
	for i := range 100 {
		r.Plan(key(i), in(t0.Add(time.Duration(i)*time.Second), t0))
	}
	freeFor := func(except types.NamespacedName) string {
		q := r.free("a", except, cpu("1000"))[corev1.ResourceCPU]
		return q.String()
	}
	if got := freeFor(key(1000)); got != "800" {
		t.Fatalf("free after 100 reservations of 2 CPUs = %s, want 800", got)
	}
	if got := freeFor(key(0)); got != "802" {
		t.Errorf("free for a RayService that holds one of them = %s, want 802 (its own not subtracted)", got)
	}
	r.Forget(key(0))
	if got := freeFor(key(1000)); got != "802" {
		t.Errorf("free after forgetting one = %s, want 802", got)
	}
	// A report taken at t0+50s covers the reservations made before t0+35s (the settle time).
	r.Plan(key(5), in(t0.Add(100*time.Second), t0.Add(50*time.Second)))
	if got := len(r.byMember["a"].byKey); got != 99-35+2 {
		t.Errorf("%d reservations left after the report, want %d (rs-35..rs-99, and rs-5 again)", got, 99-35+2)
	}
	if got := freeFor(key(1000)); got != fmt.Sprint(1000-2*(99-35+2)) {
		t.Errorf("free after expiry = %s, want %d", got, 1000-2*(99-35+2))
	}
	// Past the TTL with no new report, everything goes.
	r.Plan(key(200), in(t0.Add(10*time.Minute), t0))
	if got := len(r.byMember["a"].byKey); got != 1 {
		t.Errorf("%d reservations left past the TTL, want 1 (the new one)", got)
	}
}
