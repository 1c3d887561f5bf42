//go:build e2e

package fleet

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// memberTransitionTimeout bounds how long the hub takes to see a member's API server go away
// (Reachable turns False only after three failed probes, one per 10 s resync, or 30 s) or come
// back (the next probe and a fresh heartbeat), on a loaded machine.
const memberTransitionTimeout = 2 * time.Minute

// outages serializes the tests that stop a member's API server (they all stop ap, which no
// other test places on): a test must never see its member go away because of another test.
// Those tests still call t.Parallel, so that they run alongside the tests on us and eu.
var outages sync.Mutex

// outage is a test's hold on a member whose API server it stops and starts.
type outage struct {
	t      *testing.T
	member string
	down   bool
}

// holdMember waits until no other test stops members, then until the hub sees member Ready,
// and makes sure the member's API server runs again when the test ends, however it ends. Call
// it before creating anything the test deletes at its end, so that the member is back only
// after those deletions were asked for (cleanups run last registered first).
func holdMember(t *testing.T, member string) *outage {
	t.Helper()
	outages.Lock()
	o := &outage{t: t, member: member}
	t.Cleanup(func() {
		defer outages.Unlock()
		if o.down {
			if err := fleet.StartMemberAPIServer(context.Background(), member); err != nil {
				t.Errorf("starting the API server of %s again: %v", member, err)
			}
		}
	})
	waitMemberReady(t, member, metav1.ConditionTrue)
	return o
}

// stop stops the member's API server and returns when.
func (o *outage) stop() time.Time {
	o.t.Helper()
	at := time.Now()
	if err := fleet.StopMemberAPIServer(o.member); err != nil {
		o.t.Fatalf("stopping the API server of %s: %v", o.member, err)
	}
	o.down = true
	return at
}

// start starts the member's API server again and returns when it serves.
func (o *outage) start() time.Time {
	o.t.Helper()
	if err := fleet.StartMemberAPIServer(o.t.Context(), o.member); err != nil {
		o.t.Fatalf("starting the API server of %s again: %v", o.member, err)
	}
	o.down = false
	return time.Now()
}

// waitMemberReady waits until the hub's MemberCluster member has Ready with status want, and
// returns that condition.
func waitMemberReady(t *testing.T, member string, want metav1.ConditionStatus) metav1.Condition {
	t.Helper()
	var ready metav1.Condition
	eventuallyFor(t, memberTransitionTimeout, func(g gomega.Gomega) {
		c := meta.FindStatusCondition(memberCluster(g, member).Status.Conditions, fleetv1alpha1.ConditionReady)
		g.Expect(c).NotTo(gomega.BeNil(), "Ready condition of %s", member)
		g.Expect(c.Status).To(gomega.Equal(want), "Ready of %s: %s: %s", member, c.Reason, c.Message)
		ready = *c
	})
	return ready
}

// memberCluster is the hub's MemberCluster name.
func memberCluster(g gomega.Gomega, name string) *fleetv1alpha1.MemberCluster {
	var mc fleetv1alpha1.MemberCluster
	g.Expect(fleet.Hub.Client.Get(context.Background(), client.ObjectKey{Name: name}, &mc)).To(gomega.Succeed())
	return &mc
}

// regionIn selects the members of the given regions.
func regionIn(regions ...string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: regionKey, Operator: metav1.LabelSelectorOpIn, Values: regions,
	}}}
}

// setPolicySelector replaces the cluster selector of the policy ns/name.
func setPolicySelector(t *testing.T, ns, name string, sel *metav1.LabelSelector) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var pp fleetv1alpha1.PlacementPolicy
		if err := fleet.Hub.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, &pp); err != nil {
			return err
		}
		pp.Spec.ClusterSelector = sel
		return fleet.Hub.Client.Update(t.Context(), &pp)
	})
	if err != nil {
		t.Fatalf("changing the cluster selector of PlacementPolicy %s/%s: %v", ns, name, err)
	}
}
