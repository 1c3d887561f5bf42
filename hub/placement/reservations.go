package placement

import (
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
	total corev1.ResourceList
	// queue holds every reservation made, oldest first; an entry whose seq no longer matches
	// byKey was dropped or replaced and is skipped.
	queue []queued
}

// Reservations are the copies placed recently, by member and RayService. Planning and
// reserving happen under one lock, so that concurrent reconciles of different RayServices see
// each other's choices. The zero value is not usable: use NewReservations.
type Reservations struct {
	mu       sync.Mutex
	byMember map[string]*memberReservations
	seq      uint64
}

// NewReservations returns an empty set of reservations.
func NewReservations() *Reservations {
	return &Reservations{byMember: map[string]*memberReservations{}}
}

// Plan runs Plan for the RayService key with every member's free capacity reduced by what
// other RayServices reserved there since the member's last report (Member.ReportedAt), then
// reserves the demand, at in.Now, on the members newly chosen and drops the key's reservations
// on members no longer chosen.
func (r *Reservations) Plan(key types.NamespacedName, in Input) Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(in.Members, in.Now)
	members := slices.Clone(in.Members)
	for i := range members {
		members[i].Free = r.free(members[i].Name, key, members[i].Free)
	}
	in.Members = members
	d := Plan(in)
	for name, m := range r.byMember {
		if !slices.Contains(d.Clusters, name) {
			m.drop(key)
		}
	}
	for _, name := range d.Clusters {
		if slices.Contains(in.Current, name) {
			continue // already running there: the member's report counts it, or will
		}
		m := r.byMember[name]
		if m == nil {
			m = &memberReservations{byKey: map[types.NamespacedName]reservation{}, total: corev1.ResourceList{}}
			r.byMember[name] = m
		}
		r.seq++
		m.add(key, reservation{demand: in.Demand.DeepCopy(), at: in.Now, seq: r.seq})
	}
	return d
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

// free is a member's free capacity less the other RayServices' reservations there, never
// below zero.
func (r *Reservations) free(member string, except types.NamespacedName, free corev1.ResourceList) corev1.ResourceList {
	m := r.byMember[member]
	if m == nil || len(m.byKey) == 0 || free == nil {
		return free
	}
	out := free.DeepCopy()
	own := m.byKey[except].demand
	for name, q := range m.total {
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

// add records res for key, replacing key's earlier reservation on the member.
func (m *memberReservations) add(key types.NamespacedName, res reservation) {
	m.drop(key)
	m.byKey[key] = res
	m.queue = append(m.queue, queued{key: key, seq: res.seq})
	for name, q := range res.demand {
		sum := m.total[name]
		sum.Add(q)
		m.total[name] = sum
	}
}

// drop removes key's reservation from the member, if any; its queue entry is skipped later.
func (m *memberReservations) drop(key types.NamespacedName) {
	res, ok := m.byKey[key]
	if !ok {
		return
	}
	delete(m.byKey, key)
	for name, q := range res.demand {
		sum := m.total[name]
		sum.Sub(q)
		m.total[name] = sum
	}
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
