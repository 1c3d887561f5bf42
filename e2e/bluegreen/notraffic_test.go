//go:build e2e

package bluegreen

import (
	"testing"
	"time"

	"github.com/rayfleet/rayfleet/e2e/chaos"

	"github.com/onsi/gomega"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
)

// noTrafficTuning is TestBlueGreenNoTraffic's rollout: without traffic only the hold counts.
var noTrafficTuning = blueGreen{stepPercent: 25, intervalSeconds: 10, retireAfterSeconds: 20}

// TestBlueGreenNoTraffic rolls a RayService out blue/green under a policy that manages no
// traffic: green comes up on another member, the hub RayService says NoTrafficManaged, no route
// is made, and once green held for retireAfterSeconds blue's copy is removed, leaving green
// the only member with one.
func TestBlueGreenNoTraffic(t *testing.T) {
	const ns, name = "bg-no-traffic", "plum"
	waitMembersReady(t)
	setUp(t, ns, name, policySpec(noTrafficTuning, false))
	blue, rev1 := firstRevision(t, ns, name)

	newVersion(t, ns, name, "2")
	green := waitGreen(t, ns, name, blue)
	t.Logf("green %s comes up while blue %s keeps revision %s", green, blue, rev1)
	var hold, blueSeen time.Time
	eventuallyFor(t, firstRevisionTimeout, func(g gomega.Gomega) {
		c := trafficShifting(g, ns, name)
		g.Expect(c).NotTo(gomega.BeNil(), "TrafficShifting")
		g.Expect(c.Reason).To(gomega.Equal(fleetv1alpha1.ReasonNoTrafficManaged), "TrafficShifting: %s", c.Message)
		b := binding(g, ns, name)
		bg := blueGreenOf(b)
		g.Expect(bg).NotTo(gomega.BeNil(), "status.rollout.blueGreen")
		g.Expect(bg.Step).To(gomega.Equal(fleetv1alpha1.BlueGreenHolding), "step: %s", b.Status.Rollout.Message)
		g.Expect(bg.StepTime).NotTo(gomega.BeNil(), "stepTime")
		hold = bg.StepTime.Time
		c2 := memberCopy(g, green, ns, name)
		g.Expect(c2).NotTo(gomega.BeNil(), "copy on %s", green)
		g.Expect(ready(c2)).To(gomega.BeTrue(), "copy on %s Ready", green)
		g.Expect(c2.Annotations).To(gomega.HaveKeyWithValue(labels.Revision, b.Status.Rollout.TargetRevision), "revision on %s", green)
		blueSeen = time.Now()
		g.Expect(memberCopy(g, blue, ns, name)).NotTo(gomega.BeNil(), "copy on blue %s while green holds", blue)
	})
	s, err := readRoute(t.Context(), ns, name)
	if err != nil || s.exists {
		t.Errorf("a route for %s/%s under a policy without traffic: %v (read error %v)", ns, name, s, err)
	}

	retire := time.Duration(noTrafficTuning.retireAfterSeconds) * time.Second
	lastBlue, _ := waitCopyGone(t, blue, ns, name, blueSeen, retire+timeout)
	if earliest := hold.Add(retire - wholeSecondSlack - 2*poll); lastBlue.Before(earliest) {
		t.Errorf("blue %s's copy was gone by %s, less than %v after green started holding (%s)",
			blue, lastBlue.Format(time.TimeOnly), retire, hold.Format(time.TimeOnly))
	}
	rev2 := waitRetired(t, ns, name, green, rev1, timeout)
	t.Log(chaos.FigureLine("bluegreen-notraffic", "hold_to_blue_removed", lastBlue.Sub(hold), "revision", rev2))
}
