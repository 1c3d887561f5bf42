//go:build e2e

package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/membership"
)

// TestMemberClockSkew is scenario 9: ap's spoke stamps its heartbeats with a clock 60 s behind
// the hub's, then one an hour ahead (bin/spoke-faultinject), each for span(2m, 25s), in a
// steady fleet. The hub times heartbeats by when it saw them change, so ap must stay Ready
// throughout (its Ready condition never transitions) and nothing may move. Then ap's spoke,
// an hour ahead, is killed: the hub must notice within its heartbeat timeout plus one resync,
// as for a spoke whose clock is right, and ap is Ready again once its spoke runs.
func TestMemberClockSkew(t *testing.T) {
	const ns = "clocks"
	hold := span(2*time.Minute, 25*time.Second)
	behind, ahead := -60*time.Second, time.Hour
	// Beyond the kill's detection and recovery: the scenario checks the hub's view, not failover.
	toleration := 5 * time.Minute
	detectBound := hubHeartbeatTimeout + membership.DefaultResyncInterval
	r := scenario(t, 9, "member clock skewed",
		fmt.Sprintf("in a steady fleet of 4 RayServices, 3 of them with a copy on ap (failover toleration %v), ap's spoke "+
			"stamps its heartbeats %v off the hub's clock for %v, then %v off for %v, then is killed (SIGKILL) while an "+
			"hour ahead and started again with the right clock", toleration, behind, hold, ahead, hold),
		fmt.Sprintf("ap Ready throughout both skews (its Ready condition never transitions); no failover, no copy moved; "+
			"the killed spoke noticed within the heartbeat timeout plus one resync (%v); ap Ready again after; nothing "+
			"deleted anywhere (ledger)", detectBound))
	m := startMemberFaultFleet(t, nil)
	placed := m.placeSteadyFleet(ns, toleration)
	l := snapshot(t.Context(), t, m.f)
	var readySince metav1.Time
	m.eventually(timeout, func(g gomega.Gomega) {
		c := m.ready(g, memberAP)
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue))
		readySince = c.LastTransitionTime
	})

	for _, offset := range []time.Duration{behind, ahead} {
		if err := m.f.SkewSpokeClock(t.Context(), memberAP, offset); err != nil {
			t.Fatalf("skewing the spoke clock of %s: %v", memberAP, err)
		}
		skewedAt := time.Now()
		// The hub mirrors a heartbeat stamped with the skewed clock.
		m.eventually(timeout, func(g gomega.Gomega) {
			hb := m.memberCluster(g, memberAP).Status.LastHeartbeatTime
			g.Expect(hb).NotTo(gomega.BeNil())
			g.Expect(hb.Time).To(gomega.BeTemporally("~", time.Now().Add(offset), 30*time.Second),
				"heartbeat of %s stamped %v off", memberAP, offset)
		})
		r.Add(fmt.Sprintf("clock %v: first skewed heartbeat on the hub", offset), time.Since(skewedAt))
		consistently(t, hold, func(g gomega.Gomega) {
			c := m.ready(g, memberAP)
			g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue), "Ready of %s: %s", memberAP, c.Message)
			g.Expect(c.LastTransitionTime).To(gomega.Equal(readySince), "Ready of %s transitioned", memberAP)
			m.expectSteady(g, ns, placed)
		})
		r.Add(fmt.Sprintf("clock %v: ap not Ready", offset), "never")
	}

	killedAt := time.Now()
	if err := m.f.KillSpoke(memberAP); err != nil {
		t.Fatalf("killing the spoke of %s: %v", memberAP, err)
	}
	detect := m.waitNotReady(memberAP, detectBound+timeout).Sub(killedAt)
	r.Add("spoke killed an hour ahead: detect (ap NotReady on the hub)", detect)
	if detect > detectBound {
		t.Errorf("the hub showed %s not Ready %v after its spoke (an hour ahead) died, later than %v",
			memberAP, detect.Round(time.Millisecond), detectBound)
	}
	restartedAt := time.Now()
	if err := m.f.SkewSpokeClock(t.Context(), memberAP, 0); err != nil {
		t.Fatalf("starting the spoke of %s with the right clock: %v", memberAP, err)
	}
	m.waitBack(memberAP, restartedAt, timeout)
	r.Add("recover (ap Ready on the hub)", time.Since(restartedAt))
	m.eventually(timeout, func(g gomega.Gomega) { m.expectServingAll(g, ns, placed) })
	l.count(t.Context(), t, m.f, r)
}
