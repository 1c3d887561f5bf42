package exclusivity

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// lease builds a Lease held by holder, renewed ago before now, lasting duration seconds (0: not
// set) and acquired acquiredAgo before now.
func lease(ns, name, holder string, ago time.Duration, duration int32, acquiredAgo time.Duration) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	l.Spec.HolderIdentity = ptr.To(holder)
	l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-ago)}
	l.Spec.AcquireTime = &metav1.MicroTime{Time: now.Add(-acquiredAgo)}
	if duration > 0 {
		l.Spec.LeaseDurationSeconds = ptr.To(duration)
	}
	return l
}

// kubeRayLease is a KubeRay operator's Lease renewed ago before now, as controller-runtime
// writes it (15 s).
func kubeRayLease(ns string, ago time.Duration) coordinationv1.Lease {
	return lease(ns, KubeRayLeaseName, "kuberay-operator-7d9f_0f1e", ago, 15, time.Hour)
}

// claim is a spoke's claim Lease in ns, held by holder, acquired acquiredAgo before now.
func claim(ns, holder string, acquiredAgo time.Duration, watch string) coordinationv1.Lease {
	l := lease(ns, ClaimLeaseName, holder, time.Second, 15, acquiredAgo)
	l.Labels = map[string]string{ClaimLabel: ClaimLabelValue}
	if watch != "" {
		l.Annotations = map[string]string{WatchNamespacesAnnotation: watch}
	}
	return l
}

func TestLive(t *testing.T) {
	released := kubeRayLease("ray-system", time.Second)
	released.Spec.HolderIdentity = ptr.To("")
	neverRenewed := kubeRayLease("ray-system", 0)
	neverRenewed.Spec.RenewTime = nil
	tests := []struct {
		name  string
		lease coordinationv1.Lease
		want  bool
	}{
		{name: "renewed a second ago", lease: kubeRayLease("ray-system", time.Second), want: true},
		{name: "within its duration plus the clock skew allowance", lease: kubeRayLease("ray-system", 19*time.Second), want: true},
		{name: "past its duration plus the allowance: the operator stopped", lease: kubeRayLease("ray-system", 20*time.Second), want: false},
		{name: "a renew time ahead of our clock (skew) is live", lease: kubeRayLease("ray-system", -3*time.Second), want: true},
		{name: "no duration: controller-runtime's 15 s", lease: lease("x", KubeRayLeaseName, "h", 19*time.Second, 0, 0), want: true},
		{name: "no duration, stale", lease: lease("x", KubeRayLeaseName, "h", 21*time.Second, 0, 0), want: false},
		{name: "a long duration keeps it live longer", lease: lease("x", KubeRayLeaseName, "h", time.Minute, 60, 0), want: true},
		{name: "released (no holder)", lease: released, want: false},
		{name: "never renewed", lease: neverRenewed, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Live(&tt.lease, now); got != tt.want {
				t.Errorf("Live = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	self := Identity{Namespace: "rayfleet-system", Name: "rayfleet-spoke.rayfleet.io"}
	scoped := Identity{Namespace: "team-a-spoke", Name: "rayfleet-spoke.rayfleet.io", WatchNamespaces: []string{"team-a"}}
	acquired := now.Add(-time.Minute)
	kubeRay := Holder{Kind: KindKubeRay, Lease: types.NamespacedName{Namespace: "ray-system", Name: KubeRayLeaseName},
		Identity: "kuberay-operator-7d9f_0f1e"}
	other := func(ns string, namespaces ...string) Holder {
		return Holder{Kind: KindSpoke, Lease: types.NamespacedName{Namespace: ns, Name: ClaimLeaseName},
			Identity: ns + "/rayfleet-spoke.rayfleet.io", Namespaces: namespaces}
	}
	tests := []struct {
		name         string
		self         Identity
		selfAcquired time.Time
		leases       []coordinationv1.Lease
		want         Decision
	}{
		{name: "nothing else on the cluster", self: self, selfAcquired: acquired},
		{
			name: "our own claim is not a conflict", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{claim("rayfleet-system", self.Holder(), time.Minute, "")},
		},
		{
			name: "an active KubeRay operator", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{kubeRayLease("ray-system", 2*time.Second)},
			want:   Decision{Conflicts: []Conflict{{Reason: ReasonAnotherOperatorActive, Holder: kubeRay}}},
		},
		{
			name: "KubeRay scaled to zero: its Lease is no longer renewed", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{kubeRayLease("ray-system", time.Minute)},
		},
		{
			name: "KubeRay blocks a spoke scoped to some namespaces too: its Lease does not say what it watches",
			self: scoped, selfAcquired: acquired,
			leases: []coordinationv1.Lease{kubeRayLease("ray-system", time.Second)},
			want:   Decision{Conflicts: []Conflict{{Reason: ReasonAnotherOperatorActive, Holder: kubeRay}}},
		},
		{
			name: "an older spoke claim wins", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{claim("other-spoke", "other-spoke/rayfleet-spoke.rayfleet.io", time.Hour, "")},
			want:   Decision{Conflicts: []Conflict{{Reason: ReasonAnotherSpokeActive, Holder: other("other-spoke")}}},
		},
		{
			name: "a younger spoke claim gives way to ours", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{claim("other-spoke", "other-spoke/rayfleet-spoke.rayfleet.io", time.Second, "")},
			want:   Decision{Outranked: []Holder{other("other-spoke")}},
		},
		{
			name: "equal ages: the smaller holder identity wins, so both spokes agree", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{
				claim("a-spoke", "a-spoke/rayfleet-spoke.rayfleet.io", time.Minute, ""),
				claim("z-spoke", "z-spoke/rayfleet-spoke.rayfleet.io", time.Minute, ""),
			},
			want: Decision{
				Conflicts: []Conflict{{Reason: ReasonAnotherSpokeActive, Holder: other("a-spoke")}},
				Outranked: []Holder{other("z-spoke")},
			},
		},
		{
			name: "without a claim of our own (another installation of our namespace holds it), any live claim wins",
			self: self,
			leases: []coordinationv1.Lease{
				claim("rayfleet-system", "rayfleet-system/second-release", time.Second, ""),
			},
			want: Decision{Conflicts: []Conflict{{Reason: ReasonAnotherSpokeActive, Holder: Holder{Kind: KindSpoke,
				Lease:    types.NamespacedName{Namespace: "rayfleet-system", Name: ClaimLeaseName},
				Identity: "rayfleet-system/second-release"}}}},
		},
		{
			name: "a stale spoke claim (that spoke is gone) is ignored", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{func() coordinationv1.Lease {
				l := claim("other-spoke", "other-spoke/rayfleet-spoke.rayfleet.io", time.Hour, "")
				l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-time.Minute)}
				return l
			}()},
		},
		{
			name: "spokes on disjoint namespaces do not conflict", self: scoped, selfAcquired: acquired,
			leases: []coordinationv1.Lease{claim("team-b-spoke", "team-b-spoke/rayfleet-spoke.rayfleet.io", time.Hour, "team-b,team-c")},
		},
		{
			name: "an older spoke on overlapping namespaces wins there", self: scoped, selfAcquired: acquired,
			leases: []coordinationv1.Lease{claim("other-spoke", "other-spoke/rayfleet-spoke.rayfleet.io", time.Hour, "team-a, team-b")},
			want: Decision{Conflicts: []Conflict{{Reason: ReasonAnotherSpokeActive,
				Holder: other("other-spoke", "team-a", "team-b")}}},
		},
		{
			name: "a Lease named like KubeRay's but labelled as a claim is a claim", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{func() coordinationv1.Lease {
				l := claim("odd", "odd/x", time.Second, "")
				l.Name = KubeRayLeaseName
				return l
			}()},
			want: Decision{Outranked: []Holder{{Kind: KindSpoke,
				Lease: types.NamespacedName{Namespace: "odd", Name: KubeRayLeaseName}, Identity: "odd/x"}}},
		},
		{
			name: "KubeRay first, then spokes by Lease", self: self, selfAcquired: acquired,
			leases: []coordinationv1.Lease{
				claim("b-spoke", "b-spoke/rayfleet-spoke.rayfleet.io", time.Hour, ""),
				claim("a-spoke", "a-spoke/rayfleet-spoke.rayfleet.io", time.Hour, ""),
				kubeRayLease("ray-system", time.Second),
			},
			want: Decision{Conflicts: []Conflict{
				{Reason: ReasonAnotherOperatorActive, Holder: kubeRay},
				{Reason: ReasonAnotherSpokeActive, Holder: other("a-spoke")},
				{Reason: ReasonAnotherSpokeActive, Holder: other("b-spoke")},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(Observation{Now: now, Self: tt.self, SelfAcquired: tt.selfAcquired, Leases: tt.leases})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Decide (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecisionBlocking(t *testing.T) {
	scopedConflict := Conflict{Reason: ReasonAnotherSpokeActive, Holder: Holder{Kind: KindSpoke, Identity: "scoped", Namespaces: []string{"team-a"}}}
	allConflict := Conflict{Reason: ReasonAnotherSpokeActive, Holder: Holder{Kind: KindSpoke, Identity: "all"}}
	tests := []struct {
		name      string
		decision  Decision
		namespace string
		// want is the identity of the blocking holder; "" means none blocks.
		want string
	}{
		{name: "no conflict", namespace: "team-a"},
		{name: "the first conflict covering the namespace", decision: Decision{Conflicts: []Conflict{scopedConflict, allConflict}},
			namespace: "team-a", want: "scoped"},
		{name: "a conflict over all namespaces covers any", decision: Decision{Conflicts: []Conflict{scopedConflict, allConflict}},
			namespace: "team-z", want: "all"},
		{name: "a scoped conflict alone leaves other namespaces free", decision: Decision{Conflicts: []Conflict{scopedConflict}},
			namespace: "team-z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if c := tt.decision.Blocking(tt.namespace); c != nil {
				got = c.Holder.Identity
			}
			if got != tt.want {
				t.Errorf("Blocking(%q) is held by %q, want %q", tt.namespace, got, tt.want)
			}
		})
	}
}

func TestConflictMessage(t *testing.T) {
	tests := []struct {
		name     string
		conflict Conflict
		want     string
	}{
		{
			name:     "KubeRay",
			conflict: Conflict{Reason: ReasonAnotherOperatorActive, Holder: Holder{Kind: KindKubeRay, Identity: "kuberay-operator-abc", Lease: types.NamespacedName{Namespace: "ray-system", Name: KubeRayLeaseName}}},
			want: "KubeRay's operator is active on this cluster (Lease ray-system/ray-operator-leader held by kuberay-operator-abc): " +
				"the spoke leaves ray.io objects to it; scale it to zero or uninstall it and the spoke takes over",
		},
		{
			name:     "a spoke on some namespaces",
			conflict: Conflict{Reason: ReasonAnotherSpokeActive, Holder: Holder{Kind: KindSpoke, Identity: "other/id", Lease: types.NamespacedName{Namespace: "other", Name: ClaimLeaseName}, Namespaces: []string{"a", "b"}}},
			want: "another RayFleet spoke (other/id, claim Lease other/rayfleet-spoke-claim) reconciles namespaces a,b since " +
				"before this one started: this spoke leaves them alone; uninstall one of the two",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.conflict.Message(); got != tt.want {
				t.Errorf("Message =\n%q, want\n%q", got, tt.want)
			}
		})
	}
}
