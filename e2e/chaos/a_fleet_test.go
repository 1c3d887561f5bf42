//go:build e2e

package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// hubHeartbeatTimeout is the hub's --heartbeat-timeout in the member-fault scenarios: the
// hub's default (four missed reports of a spoke writing every 10 s), set explicitly so that
// the scenarios assert against a known value.
const hubHeartbeatTimeout = 40 * time.Second

// memberFaults drives the fleet of a member-fault scenario (1 and 2): hub objects, member
// copies and the hub's view of its members. Its methods fail the test on errors.
type memberFaults struct {
	t *testing.T
	f *localfleet.Fleet
	// down is a member whose API server or etcd is stopped: its copies cannot be read.
	down string
}

// startMemberFaultFleet starts a fleet whose hub uses hubHeartbeatTimeout, with modify (nil:
// none) adjusting its options further, and waits until the hub sees every member Ready.
func startMemberFaultFleet(t *testing.T, modify func(*localfleet.Options)) *memberFaults {
	t.Helper()
	f := startFleet(t, func(o *localfleet.Options) {
		o.HeartbeatTimeout = hubHeartbeatTimeout
		if modify != nil {
			modify(o)
		}
	})
	m := &memberFaults{t: t, f: f}
	m.eventually(timeout, func(g gomega.Gomega) {
		for _, member := range []string{memberUS, memberEU, memberAP} {
			g.Expect(m.ready(g, member).Status).To(gomega.Equal(metav1.ConditionTrue), "Ready of %s", member)
		}
	})
	return m
}

// eventually is the package's eventually that stops at once when bin/hub or a spoke exited.
func (m *memberFaults) eventually(within time.Duration, check func(g gomega.Gomega)) {
	m.t.Helper()
	eventually(m.t, within, func(g gomega.Gomega) {
		if err := m.f.Exited(); err != nil {
			gomega.StopTrying(err.Error()).Now()
		}
		check(g)
	})
}

// createNamespace creates ns on the hub.
func (m *memberFaults) createNamespace(ns string) {
	m.t.Helper()
	err := m.f.Hub.Client.Create(m.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		m.t.Fatalf("creating namespace %s on the hub: %v", ns, err)
	}
}

// createPolicy creates the PlacementPolicy ns/name on the hub.
func (m *memberFaults) createPolicy(ns, name string, spec fleetv1alpha1.PlacementPolicySpec) {
	m.t.Helper()
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := m.f.Hub.Client.Create(m.t.Context(), pp); err != nil {
		m.t.Fatalf("creating PlacementPolicy %s/%s on the hub: %v", ns, name, err)
	}
}

// setPolicySelector replaces the cluster selector of the policy ns/name, retrying on
// conflicts with the hub's status writes.
func (m *memberFaults) setPolicySelector(ns, name string, sel *metav1.LabelSelector) {
	m.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pp fleetv1alpha1.PlacementPolicy
		if err := m.f.Hub.Client.Get(m.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &pp); err != nil {
			return err
		}
		pp.Spec.ClusterSelector = sel
		return m.f.Hub.Client.Update(m.t.Context(), &pp)
	})
	if err != nil {
		m.t.Fatalf("changing the cluster selector of PlacementPolicy %s/%s: %v", ns, name, err)
	}
}

// createRayService creates a small RayService (a head and one worker) on the hub, placed by
// policy. The fleet is thrown away after the scenario, so nothing is deleted at the end.
func (m *memberFaults) createRayService(ns, name, policy string) {
	m.t.Helper()
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).Annotation(labels.PlacementPolicy, policy).Obj()
	rs.UID, rs.Generation = "", 0
	if err := m.f.Hub.Client.Create(m.t.Context(), rs); err != nil {
		m.t.Fatalf("creating RayService %s/%s on the hub: %v", ns, name, err)
	}
}

// updateRayService changes the hub RayService ns/name, retrying on conflicts with the hub's own
// writes, and returns its new generation.
func (m *memberFaults) updateRayService(ns, name string, change func(*rayv1.RayService)) int64 {
	m.t.Helper()
	var generation int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs rayv1.RayService
		if err := m.f.Hub.Client.Get(m.t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &rs); err != nil {
			return err
		}
		change(&rs)
		if err := m.f.Hub.Client.Update(m.t.Context(), &rs); err != nil {
			return err
		}
		generation = rs.Generation
		return nil
	})
	if err != nil {
		m.t.Fatalf("updating RayService %s/%s on the hub: %v", ns, name, err)
	}
	return generation
}

// hubRayService is the hub RayService ns/name.
func (m *memberFaults) hubRayService(g gomega.Gomega, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	g.Expect(m.f.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)).To(gomega.Succeed())
	return &rs
}

// memberRayService is the member's copy of ns/name, nil when it has none.
func (m *memberFaults) memberRayService(g gomega.Gomega, member, ns, name string) *rayv1.RayService {
	var rs rayv1.RayService
	err := m.f.Members[member].Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &rs)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(gomega.HaveOccurred(), "reading the copy of %s/%s on %s", ns, name, member)
	return &rs
}

// binding is the hub's RayServiceBinding of ns/name.
func (m *memberFaults) binding(g gomega.Gomega, ns, name string) *fleetv1alpha1.RayServiceBinding {
	var b fleetv1alpha1.RayServiceBinding
	g.Expect(m.f.Hub.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &b)).To(gomega.Succeed())
	return &b
}

// memberCluster is the hub's MemberCluster of member.
func (m *memberFaults) memberCluster(g gomega.Gomega, member string) *fleetv1alpha1.MemberCluster {
	var mc fleetv1alpha1.MemberCluster
	g.Expect(m.f.Hub.Client.Get(context.Background(), client.ObjectKey{Name: member}, &mc)).To(gomega.Succeed())
	return &mc
}

// ready is the Ready condition of member's MemberCluster.
func (m *memberFaults) ready(g gomega.Gomega, member string) metav1.Condition {
	c := meta.FindStatusCondition(m.memberCluster(g, member).Status.Conditions, fleetv1alpha1.ConditionReady)
	g.Expect(c).NotTo(gomega.BeNil(), "Ready condition of %s", member)
	return *c
}

// waitNotReady waits until the hub shows member not Ready and returns when the test saw it.
func (m *memberFaults) waitNotReady(member string, within time.Duration) time.Time {
	m.t.Helper()
	eventually(m.t, within, func(g gomega.Gomega) {
		c := m.ready(g, member)
		g.Expect(c.Status).NotTo(gomega.Equal(metav1.ConditionTrue), "Ready of %s: %s", member, c.Message)
	})
	return time.Now()
}

// waitBack waits until the hub shows member Ready with a heartbeat its spoke wrote after since
// (so the whole path, spoke to member to hub, works again) and returns when the test saw it.
func (m *memberFaults) waitBack(member string, since time.Time, within time.Duration) time.Time {
	m.t.Helper()
	m.eventually(within, func(g gomega.Gomega) {
		mc := m.memberCluster(g, member)
		c := meta.FindStatusCondition(mc.Status.Conditions, fleetv1alpha1.ConditionReady)
		g.Expect(c).NotTo(gomega.BeNil(), "Ready condition of %s", member)
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue), "Ready of %s: %s", member, c.Message)
		g.Expect(mc.Status.LastHeartbeatTime).NotTo(gomega.BeNil(), "heartbeat of %s", member)
		// Heartbeats have whole seconds: one after since was surely written after it.
		g.Expect(mc.Status.LastHeartbeatTime.Time.After(since)).To(gomega.BeTrue(),
			"heartbeat of %s (%v) after %v", member, mc.Status.LastHeartbeatTime.Time, since)
	})
	return time.Now()
}

// placedRayService is a RayService and the clusters the hub placed it on, to check later that
// nothing moved.
type placedRayService struct {
	ns, name string
	clusters []string
}

// expectPlaced checks that the binding of p lists p.clusters alone, none of them leaving, and
// that every placed copy exists and no copy exists elsewhere (a failover would add one).
func (m *memberFaults) expectPlaced(g gomega.Gomega, p placedRayService) {
	b := m.binding(g, p.ns, p.name)
	g.Expect(slices.Sorted(slices.Values(b.Spec.Clusters))).To(gomega.Equal(p.clusters), "clusters of %s/%s", p.ns, p.name)
	for _, cs := range b.Status.Clusters {
		g.Expect(cs.Leaving).To(gomega.BeNil(), "%s/%s leaving %s", p.ns, p.name, cs.Name)
	}
	hub := m.hubRayService(g, p.ns, p.name)
	g.Expect(hub.DeletionTimestamp).To(gomega.BeNil(), "hub RayService %s/%s being deleted", p.ns, p.name)
	for _, member := range []string{memberUS, memberEU, memberAP} {
		if !slices.Contains(p.clusters, member) && member != m.down {
			g.Expect(m.memberRayService(g, member, p.ns, p.name)).To(gomega.BeNil(), "copy of %s/%s on %s", p.ns, p.name, member)
		}
	}
}

// failoverEvents counts the hub's FailedOver and Moving events of the hub RayServices of ns.
func (m *memberFaults) failoverEvents(g gomega.Gomega, ns string) int {
	var list corev1.EventList
	g.Expect(m.f.Hub.Client.List(context.Background(), &list, client.InNamespace(ns))).To(gomega.Succeed())
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "RayService" && (e.Reason == "FailedOver" || e.Reason == "Moving") {
			n++
		}
	}
	return n
}

// rayServiceIsReady reports whether a RayService (hub or member copy) says Ready.
func rayServiceIsReady(rs *rayv1.RayService) bool {
	return rs != nil && meta.IsStatusConditionTrue(rs.Status.Conditions, string(rayv1.RayServiceReady))
}

// selectRegions selects the members of the given regions.
func selectRegions(regions ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: regionKey, Operator: metav1.LabelSelectorOpIn, Values: regions,
	}}}
}
