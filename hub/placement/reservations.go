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

// reservation is one copy's demand on one member, placed at a time.
type reservation struct {
	demand corev1.ResourceList
	at     time.Time
}

// Reservations are the copies placed recently, by member and RayService. Planning and
// reserving happen under one lock, so that concurrent reconciles of different RayServices see
// each other's choices. The zero value is not usable: use NewReservations.
type Reservations struct {
	mu       sync.Mutex
	byMember map[string]map[types.NamespacedName]reservation
}

// NewReservations returns an empty set of reservations.
func NewReservations() *Reservations {
	return &Reservations{byMember: map[string]map[types.NamespacedName]reservation{}}
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
	for name, byKey := range r.byMember {
		if _, ok := byKey[key]; ok && !slices.Contains(d.Clusters, name) {
			delete(byKey, key)
		}
	}
	for _, name := range d.Clusters {
		if slices.Contains(in.Current, name) {
			continue // already running there: the member's report counts it, or will
		}
		if r.byMember[name] == nil {
			r.byMember[name] = map[types.NamespacedName]reservation{}
		}
		r.byMember[name][key] = reservation{demand: in.Demand.DeepCopy(), at: in.Now}
	}
	return d
}

// Forget drops every reservation of a RayService that is gone.
func (r *Reservations) Forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, byKey := range r.byMember {
		delete(byKey, key)
	}
}

// expire drops the reservations a member's report has caught up with, and those past the TTL.
// A member missing from members has no report.
func (r *Reservations) expire(members []Member, now time.Time) {
	reportedAt := make(map[string]time.Time, len(members))
	for i := range members {
		reportedAt[members[i].Name] = members[i].ReportedAt
	}
	for name, byKey := range r.byMember {
		reported := reportedAt[name]
		for key, res := range byKey {
			if reported.After(res.at.Add(reservationSettle)) || now.Sub(res.at) > reservationTTL {
				delete(byKey, key)
			}
		}
		if len(byKey) == 0 {
			delete(r.byMember, name)
		}
	}
}

// free is a member's free capacity less the other RayServices' reservations there, never
// below zero.
func (r *Reservations) free(member string, except types.NamespacedName, free corev1.ResourceList) corev1.ResourceList {
	byKey := r.byMember[member]
	if len(byKey) == 0 || free == nil {
		return free
	}
	out := free.DeepCopy()
	for key, res := range byKey {
		if key == except {
			continue
		}
		for name, q := range res.demand {
			have, ok := out[name]
			if !ok {
				continue // the member has none to begin with
			}
			have.Sub(q)
			if have.Sign() < 0 {
				have = *resource.NewQuantity(0, have.Format)
			}
			out[name] = have
		}
	}
	return out
}
