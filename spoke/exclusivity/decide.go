// Package exclusivity keeps the spoke from fighting another controller over the member's
// ray.io objects. Two controllers reconciling one RayCluster delete each other's Pods, overwrite
// each other's status and submit Serve configs in turn, so the spoke refuses to touch a
// RayCluster or RayService while either of these is active on the member:
//
//   - KubeRay's operator, seen through its leader-election Lease (every KubeRay operator with
//     leader election on, the default, holds a Lease named KubeRayLeaseName in its namespace and
//     renews it every few seconds);
//   - a second spoke installation (another Helm release in another namespace, with a
//     leader-election Lease of its own), seen through the claim Lease every spoke leader keeps in
//     its namespace; the claim held the longest wins, the other spoke refuses.
//
// The Claimer (run on the leader) keeps this spoke's claim and reads the other Leases; the Gate
// holds its decision; the Enforcer applies it at the top of each reconcile: a condition and a
// Warning event on each object it leaves alone, no other write, and the object is reconciled
// again once the other controller has gone.
package exclusivity

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/types"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// KubeRayLeaseName is the leader-election ID of KubeRay's operator (ray-operator/main.go,
// fixed, not a flag); the Lease lives in the operator's namespace, or in
// --leader-election-namespace.
const KubeRayLeaseName = "ray-operator-leader"

// The claim Lease a spoke leader keeps in its own namespace.
const (
	// ClaimLeaseName names the claim Lease.
	ClaimLeaseName = "rayfleet-spoke-claim"
	// ClaimLabel marks claim Leases, so that a spoke finds every other spoke's claim with one
	// labelled list across namespaces.
	ClaimLabel = "rayfleet.io/spoke-claim"
	// ClaimLabelValue is ClaimLabel's value.
	ClaimLabelValue = "true"
	// WatchNamespacesAnnotation lists the namespaces the claiming spoke reconciles, comma
	// separated; absent or empty means all of them. Two spokes with disjoint namespaces do not
	// conflict.
	WatchNamespacesAnnotation = "rayfleet.io/watch-namespaces"
)

// kubeRayLeaseDuration is controller-runtime's default lease duration, which KubeRay keeps; it
// applies when a Lease does not say.
const kubeRayLeaseDuration = 15 * time.Second

// maxClockSkew is added to every lease duration: another controller's renew time is stamped
// with its Node's clock, not ours.
const maxClockSkew = 5 * time.Second

// Condition reasons, on the objects the spoke leaves alone and (AnotherOperatorActive) on the
// ClusterReport.
const (
	// ReasonAnotherOperatorActive: KubeRay's operator holds its leader-election Lease. The
	// ClusterReport says so with the same reason, which the hub reads.
	ReasonAnotherOperatorActive = fleetv1alpha1.ReasonAnotherOperatorActive
	// ReasonAnotherSpokeActive: another spoke installation holds an older claim on the member.
	ReasonAnotherSpokeActive = "AnotherSpokeActive"
)

// Kind is the kind of controller holding a Lease.
type Kind string

// Kinds of other controllers.
const (
	// KindKubeRay is KubeRay's operator.
	KindKubeRay Kind = "KubeRay"
	// KindSpoke is another RayFleet spoke installation.
	KindSpoke Kind = "Spoke"
)

// Identity is one spoke installation: its claim lives in Namespace, its holder identity is
// Namespace/Name. Name is shared by the replicas of one installation (the leader-election ID),
// so that a new leader carries the claim on.
type Identity struct {
	// Namespace holds the claim Lease: the spoke's own namespace.
	Namespace string
	// Name tells installations in one namespace apart.
	Name string
	// WatchNamespaces are the namespaces the spoke reconciles; empty means all.
	WatchNamespaces []string
}

// Holder returns the holder identity written into the claim Lease.
func (id Identity) Holder() string { return id.Namespace + "/" + id.Name }

// Holder is another controller found active on the member.
type Holder struct {
	// Kind says whether it is KubeRay or a spoke.
	Kind Kind
	// Lease is the Lease it holds.
	Lease types.NamespacedName
	// Identity is the Lease's holder identity (a KubeRay Pod, or a spoke's Namespace/Name).
	Identity string
	// Namespaces are the namespaces it reconciles; empty means all (always, for KubeRay: its
	// Lease does not tell).
	Namespaces []string
}

// Conflict is another controller this spoke gives way to.
type Conflict struct {
	// Reason is ReasonAnotherOperatorActive or ReasonAnotherSpokeActive.
	Reason string
	// Holder is the other controller.
	Holder Holder
}

// Covers reports whether the other controller reconciles namespace.
func (c Conflict) Covers(namespace string) bool {
	return len(c.Holder.Namespaces) == 0 || slices.Contains(c.Holder.Namespaces, namespace)
}

// Message says who the other controller is, stably (no times), so that a condition carrying it
// is written once.
func (c Conflict) Message() string {
	switch c.Holder.Kind {
	case KindKubeRay:
		return fmt.Sprintf("KubeRay's operator is active on this cluster (Lease %s held by %s): the spoke "+
			"leaves ray.io objects to it; scale it to zero or uninstall it and the spoke takes over",
			c.Holder.Lease, c.Holder.Identity)
	default:
		return fmt.Sprintf("another RayFleet spoke (%s, claim Lease %s) reconciles %s since before this one "+
			"started: this spoke leaves them alone; uninstall one of the two",
			c.Holder.Identity, c.Holder.Lease, describeNamespaces(c.Holder.Namespaces))
	}
}

func describeNamespaces(ns []string) string {
	if len(ns) == 0 {
		return "all namespaces"
	}
	return "namespaces " + strings.Join(ns, ",")
}

// Decision is what one look at the member's Leases concluded.
type Decision struct {
	// Conflicts are the other controllers this spoke gives way to, KubeRay first.
	Conflicts []Conflict
	// Outranked are other spokes whose claims are younger than ours: they give way to this
	// one, which carries on (and logs them).
	Outranked []Holder
}

// Blocking returns the conflict that keeps the spoke from reconciling objects of namespace, nil
// when there is none.
func (d Decision) Blocking(namespace string) *Conflict {
	for i := range d.Conflicts {
		if d.Conflicts[i].Covers(namespace) {
			return &d.Conflicts[i]
		}
	}
	return nil
}

// Observation is what the Claimer read in one round.
type Observation struct {
	// Now is the spoke's clock.
	Now time.Time
	// Self is this spoke.
	Self Identity
	// SelfAcquired is when this spoke's live claim was acquired; zero when it holds none (its
	// claim Lease is held by another installation of its namespace, or could not be written).
	SelfAcquired time.Time
	// Leases are KubeRay's leader-election Leases and the claim Leases, of every namespace.
	Leases []coordinationv1.Lease
}

// Decide returns whom the spoke gives way to. It makes no API calls.
func Decide(obs Observation) Decision {
	var d Decision
	self := obs.Self.Holder()
	for i := range obs.Leases {
		l := &obs.Leases[i]
		holder := ptrValue(l.Spec.HolderIdentity)
		if !Live(l, obs.Now) {
			continue
		}
		key := types.NamespacedName{Namespace: l.Namespace, Name: l.Name}
		switch {
		case l.Name == KubeRayLeaseName && l.Labels[ClaimLabel] != ClaimLabelValue:
			d.Conflicts = append(d.Conflicts, Conflict{Reason: ReasonAnotherOperatorActive,
				Holder: Holder{Kind: KindKubeRay, Lease: key, Identity: holder}})
		case l.Labels[ClaimLabel] == ClaimLabelValue && holder != self:
			other := Holder{Kind: KindSpoke, Lease: key, Identity: holder, Namespaces: claimNamespaces(l)}
			if !overlap(obs.Self.WatchNamespaces, other.Namespaces) {
				continue
			}
			if obs.SelfAcquired.IsZero() || claimedBefore(l, holder, obs.SelfAcquired, self) {
				d.Conflicts = append(d.Conflicts, Conflict{Reason: ReasonAnotherSpokeActive, Holder: other})
			} else {
				d.Outranked = append(d.Outranked, other)
			}
		}
	}
	// KubeRay first, then by Lease, so that the same Leases always give the same first conflict
	// (the one objects are told about).
	slices.SortFunc(d.Conflicts, func(a, b Conflict) int {
		return cmp.Or(cmp.Compare(a.Holder.Kind, b.Holder.Kind), compareKeys(a.Holder.Lease, b.Holder.Lease))
	})
	slices.SortFunc(d.Outranked, func(a, b Holder) int { return compareKeys(a.Lease, b.Lease) })
	return d
}

// Live reports whether l is held and was renewed within its duration (plus maxClockSkew) before
// now. A released Lease (no holder) is not live; KubeRay does not release its Lease when it
// stops, so its Lease stops being live once it is no longer renewed.
func Live(l *coordinationv1.Lease, now time.Time) bool {
	if ptrValue(l.Spec.HolderIdentity) == "" || l.Spec.RenewTime == nil {
		return false
	}
	d := kubeRayLeaseDuration
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return now.Before(l.Spec.RenewTime.Add(d + maxClockSkew))
}

// claimedBefore reports whether the claim l (held by holder) is older than ours; equal times
// are ordered by holder identity, so that two spokes always agree on which one wins.
func claimedBefore(l *coordinationv1.Lease, holder string, selfAcquired time.Time, self string) bool {
	if l.Spec.AcquireTime == nil {
		return false
	}
	theirs := l.Spec.AcquireTime.Time
	if !theirs.Equal(selfAcquired) {
		return theirs.Before(selfAcquired)
	}
	return holder < self
}

// claimNamespaces reads the claim's WatchNamespacesAnnotation.
func claimNamespaces(l *coordinationv1.Lease) []string {
	return SplitNamespaces(l.Annotations[WatchNamespacesAnnotation])
}

// SplitNamespaces parses a comma-separated namespace list; empty means all.
func SplitNamespaces(s string) []string {
	var out []string
	for ns := range strings.SplitSeq(s, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}

// overlap reports whether two namespace scopes (empty meaning all) share a namespace.
func overlap(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	return slices.ContainsFunc(a, func(ns string) bool { return slices.Contains(b, ns) })
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
