package placement

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
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
			func(r *Reservations) Decision { return plan(r, key("x"), in(reported, t0)) },
			func(r *Reservations) Decision { return plan(r, key("y"), in(reported, t0.Add(time.Second))) },
		},
		want: []string{"a", "b"},
	}, {
		name: "a third finds no room while the first two are reserved",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return plan(r, key("x"), in(reported, t0)) },
			func(r *Reservations) Decision { return plan(r, key("y"), in(reported, t0)) },
			func(r *Reservations) Decision { return plan(r, key("z"), in(reported, t0)) },
		},
		want: []string{"a", "b", ""},
	}, {
		name: "a RayService's own reservation does not push it off its member on the next plan",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return plan(r, key("x"), in(reported, t0)) },
			func(r *Reservations) Decision {
				return plan(r, key("x"), in(reported, t0.Add(time.Second), "a"))
			},
		},
		want: []string{"a", "a"},
	}, {
		name: "a report taken after the settle time counts the copy itself, so the reservation stops",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return plan(r, key("x"), in(reported, t0)) },
			// The new report (here still showing 8 free: the member is what it says) is later
			// than placement + settle, so only the report counts.
			func(r *Reservations) Decision {
				late := map[string]time.Time{"a": t0.Add(reservationSettle + time.Second), "b": reported["b"]}
				return plan(r, key("y"), in(late, t0.Add(reservationSettle+2*time.Second)))
			},
		},
		want: []string{"a", "a"},
	}, {
		name: "without any new report, a reservation ends after its TTL",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return plan(r, key("x"), in(reported, t0)) },
			func(r *Reservations) Decision {
				return plan(r, key("y"), in(reported, t0.Add(reservationTTL+time.Second)))
			},
		},
		want: []string{"a", "a"},
	}, {
		name: "a deleted RayService's reservation is forgotten",
		steps: []func(r *Reservations) Decision{
			func(r *Reservations) Decision { return plan(r, key("x"), in(reported, t0)) },
			func(r *Reservations) Decision {
				r.Forget(key("x"))
				return Decision{Clusters: []string{"-"}}
			},
			func(r *Reservations) Decision { return plan(r, key("y"), in(reported, t0)) },
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
			got := reservedFree(r, tt.member, self, tt.free)
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
		plan(r, key(i), in(t0.Add(time.Duration(i)*time.Second), t0))
	}
	freeFor := func(except types.NamespacedName) string {
		q := reservedFree(r, "a", except, cpu("1000"))[corev1.ResourceCPU]
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
	plan(r, key(5), in(t0.Add(100*time.Second), t0.Add(50*time.Second)))
	if got := len(r.byMember["a"].byKey); got != 99-35+2 {
		t.Errorf("%d reservations left after the report, want %d (rs-35..rs-99, and rs-5 again)", got, 99-35+2)
	}
	if got := freeFor(key(1000)); got != fmt.Sprint(1000-2*(99-35+2)) {
		t.Errorf("free after expiry = %s, want %d", got, 1000-2*(99-35+2))
	}
	// Past the TTL with no new report, everything goes.
	plan(r, key(200), in(t0.Add(10*time.Minute), t0))
	if got := len(r.byMember["a"].byKey); got != 1 {
		t.Errorf("%d reservations left past the TTL, want 1 (the new one)", got)
	}
}

// TestSnapshotKeepsItsFigures checks that a snapshot, which shares the reservations' resource
// lists rather than copying them, does not see what is recorded or forgotten after it.
func TestSnapshotKeepsItsFigures(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	members := []Member{{Name: "a", Ready: true, Free: cpu("100"), ReportedAt: t0}}
	in := Input{Demand: cpu("2"), Policy: Policy{Clusters: 1}, Members: members, Now: t0}
	x, y := types.NamespacedName{Namespace: "ns", Name: "x"}, types.NamespacedName{Namespace: "ns", Name: "y"}
	cpuOf := func(l corev1.ResourceList) string {
		q := l[corev1.ResourceCPU]
		return q.String()
	}
	r := NewReservations()
	plan(r, x, in)
	before := r.Snapshot(t0, members, x)
	wantTotal, wantOwn := cpuOf(before.total["a"]), cpuOf(before.own[x]["a"])
	plan(r, y, in)
	r.Forget(x)
	if got := cpuOf(before.total["a"]); got != wantTotal {
		t.Errorf("the snapshot's total on a became %s after later records, want %s", got, wantTotal)
	}
	if got := cpuOf(before.own[x]["a"]); got != wantOwn {
		t.Errorf("the snapshot's own part on a became %s after later records, want %s", got, wantOwn)
	}
	if got := cpuOf(r.Snapshot(t0, members).total["a"]); got != "2" {
		t.Errorf("a new snapshot's total on a = %s, want 2 (y's alone)", got)
	}
}

// plan is one reconcile's use of r: a snapshot, the pure plan, the intent recorded.
func plan(r *Reservations, key types.NamespacedName, in Input) Decision {
	d, intent := PlanReserved(r.Snapshot(in.Now, in.Members, key), key, in)
	if misfit := r.Record(intent); misfit != nil {
		panic(fmt.Sprintf("recording on a fresh snapshot found %v full", misfit))
	}
	return d
}

// reservedFree is free on member less the reservations r records there, except's own excepted.
func reservedFree(r *Reservations, member string, except types.NamespacedName, free corev1.ResourceList) corev1.ResourceList {
	m := r.byMember[member]
	if m == nil {
		return free
	}
	return less(free, m.total, m.byKey[except].demand)
}

// TestPlanReserved tables planning from a snapshot: what the plan chooses, the intent it
// returns, and that neither planning nor With changes the snapshot it read.
func TestPlanReserved(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	self := types.NamespacedName{Namespace: "ns", Name: "self"}
	green := types.NamespacedName{Namespace: "ns", Name: "self/green"}
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	in := Input{Demand: cpu("6"), Policy: Policy{Clusters: 1}, Members: twoMembers(t0, t0), Now: t0}
	// snapshot is a fresh snapshot of the reservations record makes, for self and green.
	snapshot := func(record ...Intent) Snapshot {
		r := NewReservations()
		if misfit := r.Record(record...); misfit != nil {
			t.Fatalf("setting up: %v full", misfit)
		}
		return r.Snapshot(t0, nil, self, green)
	}
	on := func(key types.NamespacedName, members ...string) Intent {
		i := Intent{Key: key, Demand: cpu("6"), At: t0, Chosen: members, Reserve: map[string]corev1.ResourceList{}}
		for _, m := range members {
			i.Reserve[m] = cpu("8")
		}
		return i
	}
	tests := []struct {
		name    string
		view    func() Snapshot
		key     types.NamespacedName
		current []string
		want    string
		// wantReserve are the members the intent reserves on.
		wantReserve []string
	}{{
		name: "nothing reserved: the first member by name, reserved", view: func() Snapshot { return snapshot() },
		key: self, want: "a", wantReserve: []string{"a"},
	}, {
		name: "another RayService's reservation fills a", view: func() Snapshot { return snapshot(on(other, "a")) },
		key: self, want: "b", wantReserve: []string{"b"},
	}, {
		name: "its own reservation does not count against it", view: func() Snapshot { return snapshot(on(self, "a")) },
		key: self, want: "a", wantReserve: []string{"a"},
	}, {
		name: "a member already running the copy is chosen, not reserved", view: func() Snapshot { return snapshot() },
		key: self, current: []string{"a"}, want: "a",
	}, {
		name: "green sees blue's intent of the same plan", view: func() Snapshot { return snapshot().With(on(self, "a")) },
		key: green, want: "b", wantReserve: []string{"b"},
	}, {
		name: "blue's intent dropping its reservation on a frees a for green",
		view: func() Snapshot { return snapshot(on(self, "a")).With(on(self, "b")) },
		key:  green, want: "a", wantReserve: []string{"a"},
	}, {
		name: "every member filled: nothing chosen, every reservation of the key dropped",
		view: func() Snapshot {
			return snapshot(on(other, "a"), Intent{Key: other, Demand: cpu("6"), At: t0, Chosen: []string{"a", "b"}, Reserve: map[string]corev1.ResourceList{"b": cpu("8")}})
		},
		key: self,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view := tt.view()
			in := in
			in.Current = tt.current
			d, intent := PlanReserved(view, tt.key, in)
			if got := strings.Join(d.Clusters, ","); got != tt.want {
				t.Errorf("chose %q (%s), want %q", got, d.Message, tt.want)
			}
			if got := slices.Sorted(maps.Keys(intent.Reserve)); !slices.Equal(got, tt.wantReserve) {
				t.Errorf("intent reserves on %v, want %v", got, tt.wantReserve)
			}
			if intent.Key != tt.key || !slices.Equal(intent.Chosen, d.Clusters) || !intent.At.Equal(t0) {
				t.Errorf("intent = %+v, want key %s, chosen %v at %s", intent, tt.key, d.Clusters, t0)
			}
			again, againIntent := PlanReserved(view, tt.key, in)
			if !reflect.DeepEqual(d, again) || !reflect.DeepEqual(intent, againIntent) {
				t.Errorf("a second plan differs:\nfirst  %+v %+v\nsecond %+v %+v", d, intent, again, againIntent)
			}
			view.With(intent)
			if !reflect.DeepEqual(view, tt.view()) {
				t.Errorf("planning or With changed the snapshot:\nnow  %+v\nwant %+v", view, tt.view())
			}
		})
	}
}

// TestRecord tables the executor's side: an intent recorded when its demand still fits every
// member it newly reserves, given the reservations recorded since its snapshot; nothing
// recorded otherwise.
func TestRecord(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	x := types.NamespacedName{Namespace: "ns", Name: "x"}
	y := types.NamespacedName{Namespace: "ns", Name: "y"}
	members := twoMembers(t0, t0)
	// planned is key's intent planned now from snap.
	planned := func(snap Snapshot, key types.NamespacedName, current ...string) Intent {
		_, intent := PlanReserved(snap, key, Input{Demand: cpu("6"), Policy: Policy{Clusters: 1}, Members: members, Current: current, Now: t0})
		return intent
	}
	tests := []struct {
		name string
		// run records what the case needs and returns the misfits of the intent under test.
		run func(r *Reservations) []string
		// wantMisfit are the members Record refused; wantReserved the keys reserved per member after.
		wantMisfit   []string
		wantReserved map[string][]types.NamespacedName
	}{{
		name: "fits: recorded",
		run: func(r *Reservations) []string {
			return r.Record(planned(r.Snapshot(t0, members, x), x))
		},
		wantReserved: map[string][]types.NamespacedName{"a": {x}},
	}, {
		name: "two plans on one stale snapshot: the second no longer fits and records nothing",
		run: func(r *Reservations) []string {
			stale := r.Snapshot(t0, members, x, y)
			first, second := planned(stale, x), planned(stale, y)
			if misfit := r.Record(first); misfit != nil {
				t.Fatalf("first: %v full", misfit)
			}
			return r.Record(second)
		},
		wantMisfit:   []string{"a"},
		wantReserved: map[string][]types.NamespacedName{"a": {x}},
	}, {
		name: "a stale snapshot is no misfit where there is room for both",
		run: func(r *Reservations) []string {
			stale := r.Snapshot(t0, members, x, y)
			first := planned(stale, x)
			second := planned(stale, y)
			second.Demand = cpu("2")
			if misfit := r.Record(first); misfit != nil {
				t.Fatalf("first: %v full", misfit)
			}
			return r.Record(second)
		},
		wantReserved: map[string][]types.NamespacedName{"a": {x, y}},
	}, {
		name: "a misfit keeps the key's earlier reservations: nothing is dropped either",
		run: func(r *Reservations) []string {
			r.Record(Intent{Key: y, Demand: cpu("6"), At: t0, Chosen: []string{"b"}, Reserve: map[string]corev1.ResourceList{"b": cpu("8")}})
			stale := r.Snapshot(t0, members, x, y)
			moved := Intent{Key: y, Demand: cpu("6"), At: t0, Chosen: []string{"a"}, Reserve: map[string]corev1.ResourceList{"a": cpu("8")}}
			r.Record(planned(stale, x))
			return r.Record(moved)
		},
		wantMisfit:   []string{"a"},
		wantReserved: map[string][]types.NamespacedName{"a": {x}, "b": {y}},
	}, {
		name: "members no longer chosen lose the key's reservation",
		run: func(r *Reservations) []string {
			r.Record(planned(r.Snapshot(t0, members, x), x))
			return r.Record(Intent{Key: x, Chosen: []string{"b"}})
		},
		wantReserved: map[string][]types.NamespacedName{},
	}, {
		name: "a member running the copy keeps what the key reserved there, and reserves nothing new",
		run: func(r *Reservations) []string {
			r.Record(planned(r.Snapshot(t0, members, x), x))
			return r.Record(planned(r.Snapshot(t0, members, x), x, "a"))
		},
		wantReserved: map[string][]types.NamespacedName{"a": {x}},
	}, {
		name: "blue and green of one decision on one member with room for one: both held",
		run: func(r *Reservations) []string {
			blue := Intent{Key: x, Demand: cpu("6"), At: t0, Chosen: []string{"a"}, Reserve: map[string]corev1.ResourceList{"a": cpu("8")}}
			green := Intent{Key: y, Demand: cpu("6"), At: t0, Chosen: []string{"a"}, Reserve: map[string]corev1.ResourceList{"a": cpu("8")}}
			return r.Record(blue, green)
		},
		wantMisfit:   []string{"a"},
		wantReserved: map[string][]types.NamespacedName{},
	}, {
		name: "a reservation a later report includes expires at the next snapshot, so it no longer blocks",
		run: func(r *Reservations) []string {
			stale := r.Snapshot(t0, members, x, y)
			r.Record(planned(stale, x))
			later := twoMembers(t0.Add(reservationSettle+time.Second), t0)
			next := r.Snapshot(t0.Add(reservationSettle+2*time.Second), later, y)
			_, intent := PlanReserved(next, y, Input{Demand: cpu("6"), Policy: Policy{Clusters: 1}, Members: later, Now: t0})
			return r.Record(intent)
		},
		wantReserved: map[string][]types.NamespacedName{"a": {y}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReservations()
			if got := tt.run(r); !slices.Equal(got, tt.wantMisfit) {
				t.Errorf("misfit = %v, want %v", got, tt.wantMisfit)
			}
			got := map[string][]types.NamespacedName{}
			for name, m := range r.byMember {
				for key := range m.byKey {
					got[name] = append(got[name], key)
				}
				slices.SortFunc(got[name], func(a, b types.NamespacedName) int { return strings.Compare(a.String(), b.String()) })
			}
			if !reflect.DeepEqual(got, tt.wantReserved) {
				t.Errorf("reserved = %v, want %v", got, tt.wantReserved)
			}
		})
	}
}
