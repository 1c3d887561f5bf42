package placement

import (
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// A member's free capacity reaches the hub through its ClusterReport, every ~10 s, and a copy
// the hub has just placed shows in it only once the spoke has created its Pods and the report
// after that has been mirrored. Until then the hub itself remembers what it placed, as the
// Kubernetes scheduler assumes a Pod bound before the kubelet reports it; otherwise a burst of
// RayServices, planned on the same stale figures, all choose the same member.
const (
	// reservationSettle is how long after a placement a member's report may still miss the new
	// copy's Pods: the apply, the spoke's RayCluster and Pods and the scheduler take a few
	// seconds. A report taken later than that includes them, and the reservation stops counting.
	reservationSettle = 15 * time.Second
	// reservationTTL bounds a reservation when no new report arrives at all (a member whose
	// spoke stopped): it cannot keep capacity hidden forever.
	reservationTTL = 2 * time.Minute
)

// reservation is one copy's demand on one member, placed at a time; seq tells it from an
// earlier reservation of the same RayService in the member's queue.
type reservation struct {
	demand corev1.ResourceList
	at     time.Time
	seq    uint64
}

// queued is a reservation's place in its member's queue.
type queued struct {
	key types.NamespacedName
	seq uint64
}

// memberReservations are one member's reservations with their running total, and a queue in
// the order they were made, so that planning costs the same whether 10 or 10,000 RayServices
// were placed in the last seconds: free subtracts the total, and expiry pops from the front.
type memberReservations struct {
	byKey map[types.NamespacedName]reservation
	// total is replaced, never changed in place: Snapshots share it (and the reservations'
	// demands), where copying every member's at every reconcile was most of placement's
	// allocations after the caches'.
	total corev1.ResourceList
	// queue holds every reservation made, oldest first; an entry whose seq no longer matches
	// byKey was dropped or replaced and is skipped.
	queue []queued
}

// Reservations are the copies placed recently, by member and RayService. A reconcile reads a
// Snapshot of them with its group, plans from the snapshot alone (PlanReserved), and its
// executor records the plan's Intent (Record) before it applies a copy: concurrent reconciles
// of different RayServices see each other's recorded choices, and a plan mutates nothing. The
// zero value is not usable: use NewReservations.
type Reservations struct {
	mu       sync.Mutex
	byMember map[string]*memberReservations
	seq      uint64
}

// NewReservations returns an empty set of reservations.
func NewReservations() *Reservations {
	return &Reservations{byMember: map[string]*memberReservations{}}
}

// Snapshot is what one RayService's plans need of the reservations, as they stood when its
// group was read: every member's reserved total, and the RayService's own part of it under
// each of its keys. Planning from it costs O(members) however many RayServices hold
// reservations. Its resource lists are the Reservations' own, read only. The zero value has no
// reservations.
type Snapshot struct {
	total map[string]corev1.ResourceList
	own   map[types.NamespacedName]map[string]corev1.ResourceList
}

// Intent is what a plan asks of the reservations. Members already running the copy are
// chosen but never reserved: their reports count it.
type Intent struct {
	// Key is the RayService (or its green set) the reservations are for.
	Key types.NamespacedName
	// Demand is one copy's demand, reserved on each member of Reserve.
	Demand corev1.ResourceList
	// At is when the plan was made, from which the reservations expire.
	At time.Time
	// Reserve are the members newly chosen, each with the free capacity its report gave, which
	// Record checks Demand against again.
	Reserve map[string]corev1.ResourceList
	// Chosen are all the members chosen: Key's reservations on any other are dropped.
	Chosen []string
}

// Snapshot drops the reservations the members' reports caught up with and those past the TTL,
// then returns what remains for the RayService's keys.
func (r *Reservations) Snapshot(now time.Time, members []Member, keys ...types.NamespacedName) Snapshot {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(members, now)
	s := Snapshot{total: make(map[string]corev1.ResourceList, len(r.byMember)),
		own: make(map[types.NamespacedName]map[string]corev1.ResourceList, len(keys))}
	for name, m := range r.byMember {
		s.total[name] = m.total
		for _, key := range keys {
			if res, ok := m.byKey[key]; ok {
				if s.own[key] == nil {
					s.own[key] = map[string]corev1.ResourceList{}
				}
				s.own[key][name] = res.demand
			}
		}
	}
	return s
}

// PlanReserved runs Plan for the RayService key with every member's free capacity reduced by
// what other RayServices had reserved there in s, and returns the intent the decision implies.
func PlanReserved(s Snapshot, key types.NamespacedName, in Input) (Decision, Intent) {
	reported := in.Members
	members := slices.Clone(in.Members)
	for i := range members {
		members[i].Free = less(members[i].Free, s.total[members[i].Name], s.own[key][members[i].Name])
	}
	in.Members = members
	d := Plan(in)
	intent := Intent{Key: key, Demand: in.Demand, At: in.Now, Chosen: slices.Clone(d.Clusters)}
	for i := range reported {
		name := reported[i].Name
		if !slices.Contains(d.Clusters, name) || slices.Contains(in.Current, name) {
			continue
		}
		if intent.Reserve == nil {
			intent.Reserve = map[string]corev1.ResourceList{}
		}
		intent.Reserve[name] = reported[i].Free
	}
	return d, intent
}

// With is s as it would be once intent is recorded: a later plan of the same reconcile (green
// after blue) sees the earlier one's choices. s itself is unchanged.
func (s Snapshot) With(intent Intent) Snapshot {
	out := Snapshot{total: maps.Clone(s.total), own: maps.Clone(s.own)}
	if out.total == nil {
		out.total = map[string]corev1.ResourceList{}
	}
	if out.own == nil {
		out.own = map[types.NamespacedName]map[string]corev1.ResourceList{}
	}
	own := map[string]corev1.ResourceList{}
	for name, demand := range s.own[intent.Key] {
		_, reserve := intent.Reserve[name]
		if reserve || !slices.Contains(intent.Chosen, name) {
			out.total[name] = minus(out.total[name], demand)
			continue
		}
		own[name] = demand
	}
	for name := range intent.Reserve {
		out.total[name] = plus(out.total[name], intent.Demand)
		own[name] = intent.Demand
	}
	out.own[intent.Key] = own
	return out
}

// Record records the intents of one decision, in order, unless the demand of one of them no
// longer fits a member it newly reserves, given the reservations recorded since its snapshot
// (and those of the intents before it): then it records nothing and returns those members.
// Checking fit rather than whether anything changed lets concurrent plans of a burst succeed
// wherever there is room for all of them.
func (r *Reservations) Record(intents ...Intent) (misfit []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	pending := map[string]corev1.ResourceList{}
	for _, in := range intents {
		asked := askedFor(in.Demand)
		for _, name := range slices.Sorted(maps.Keys(in.Reserve)) {
			var total, own corev1.ResourceList
			if m := r.byMember[name]; m != nil {
				total, own = m.total, m.byKey[in.Key].demand
			}
			free := less(in.Reserve[name], plus(total, pending[name]), own)
			if shortages(in.Demand, asked, free) != "" {
				misfit = append(misfit, name)
			}
			pending[name] = plus(pending[name], in.Demand)
		}
	}
	if len(misfit) > 0 {
		return misfit
	}
	for _, in := range intents {
		r.record(in)
	}
	return nil
}

// record carries out one intent.
func (r *Reservations) record(in Intent) {
	for name, m := range r.byMember {
		if !slices.Contains(in.Chosen, name) {
			m.drop(in.Key)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(in.Reserve)) {
		m := r.byMember[name]
		if m == nil {
			m = &memberReservations{byKey: map[types.NamespacedName]reservation{}, total: corev1.ResourceList{}}
			r.byMember[name] = m
		}
		r.seq++
		m.add(in.Key, reservation{demand: in.Demand.DeepCopy(), at: in.At, seq: r.seq})
	}
}

// Forget drops every reservation of a RayService that is gone.
func (r *Reservations) Forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.byMember {
		m.drop(key)
	}
}

// expire drops the reservations a member's report has caught up with, and those past the TTL.
// A member missing from members has no report. Reservations are queued in the order they were
// made, so each member's expired ones are at the front of its queue.
func (r *Reservations) expire(members []Member, now time.Time) {
	reportedAt := make(map[string]time.Time, len(members))
	for i := range members {
		reportedAt[members[i].Name] = members[i].ReportedAt
	}
	for name, m := range r.byMember {
		reported := reportedAt[name]
		m.expire(func(res reservation) bool {
			return reported.After(res.at.Add(reservationSettle)) || now.Sub(res.at) > reservationTTL
		})
		if len(m.byKey) == 0 {
			delete(r.byMember, name)
		}
	}
}

// less is free less what total reserves, except own (the planning RayService's part of it),
// never below zero; free's absent resources stay absent.
func less(free, total, own corev1.ResourceList) corev1.ResourceList {
	if len(total) == 0 || free == nil {
		return free
	}
	out := free.DeepCopy()
	for name, q := range total {
		have, ok := out[name]
		if !ok {
			continue // the member has none to begin with
		}
		have.Sub(q)
		if mine, ok := own[name]; ok {
			have.Add(mine)
		}
		if have.Sign() < 0 {
			have = *resource.NewQuantity(0, have.Format)
		}
		out[name] = have
	}
	return out
}

// minus returns a - b without modifying either.
func minus(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	for name, q := range b {
		have := out[name]
		have.Sub(q)
		out[name] = have
	}
	return out
}

// add records res for key, replacing key's earlier reservation on the member.
func (m *memberReservations) add(key types.NamespacedName, res reservation) {
	m.drop(key)
	m.byKey[key] = res
	m.queue = append(m.queue, queued{key: key, seq: res.seq})
	m.total = plus(m.total, res.demand)
}

// drop removes key's reservation from the member, if any; its queue entry is skipped later.
func (m *memberReservations) drop(key types.NamespacedName) {
	res, ok := m.byKey[key]
	if !ok {
		return
	}
	delete(m.byKey, key)
	m.total = minus(m.total, res.demand)
}

// expire drops reservations from the front of the queue while done says they are over.
// Reservations made out of order by a few milliseconds (concurrent reconciles read the clock
// before taking the lock) wait behind a younger one for a later plan, which only keeps them a
// moment longer.
func (m *memberReservations) expire(done func(reservation) bool) {
	for len(m.queue) > 0 {
		head := m.queue[0]
		if res, ok := m.byKey[head.key]; ok && res.seq == head.seq {
			if !done(res) {
				break
			}
			m.drop(head.key)
		}
		// append copies the live entries to a new array once this one is full, which lets
		// the popped ones go.
		m.queue = m.queue[1:]
	}
}
