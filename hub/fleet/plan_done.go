package fleet

// Phase: plan. Whether a member's copy runs the revision it was given.

import (
	"fmt"
	"maps"
	"slices"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/hub/rollout"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// doneState is whether a member copy runs the revision it should, in the Ray-aware sense a
// rollout waits for (the soak aside).
type doneState struct {
	done bool
	// why says, when not done, what the member still lacks, in its own words where it has any.
	why string
	// blocked is set when the revision's RayCluster spec can never reach the running cluster:
	// with upgradeStrategy.type None the member keeps its RayCluster whatever the spec says.
	blocked bool
}

// doneFor reports whether copy (as read from the member) runs desired, the copy of revision
// rev the hub applies there. Every signal must hold: the copy carries the revision and its
// spec hash; the member has observed that generation; the spoke reports that its active
// RayCluster was built from this RayCluster spec and runs this Serve config; no pending
// RayCluster; no upgrade or rollback in progress; Ready; every Serve application RUNNING. A
// weaker signal (the object was applied, the copy is Ready) is not done: a copy stays Ready
// on its old RayCluster through a zero-downtime upgrade. serving is servingState(member),
// derived once with the member's facts.
func doneFor(member, desired *rayv1.RayService, rev string, serving doneState) doneState {
	switch {
	case member == nil:
		return doneState{why: "no copy yet"}
	case member.Annotations[labels.Revision] != rev || member.Annotations[labels.SpecHash] != desired.Annotations[labels.SpecHash]:
		return doneState{why: rollout.Applying(rev)}
	case member.Status.ObservedGeneration < member.Generation:
		return doneState{why: rollout.Applying(rev)}
	}
	if why, blocked := runningDiffers(member, desired); why != "" {
		return doneState{why: why, blocked: blocked}
	}
	return serving
}

// servingState is the Ray half of doneFor, whatever revision the copy runs: no upgrade or
// rollback in progress, Ready, every Serve application RUNNING.
func servingState(member *rayv1.RayService) doneState {
	if member == nil {
		return doneState{why: "no copy yet"}
	}
	st := &member.Status
	if st.PendingServiceStatus.RayClusterName != "" {
		return doneState{why: "upgrading: pending RayCluster " + st.PendingServiceStatus.RayClusterName}
	}
	for _, t := range []rayv1.RayServiceConditionType{rayv1.UpgradeInProgress, rayv1.RollbackInProgress} {
		if c := meta.FindStatusCondition(st.Conditions, string(t)); c != nil && c.Status == metav1.ConditionTrue {
			return doneState{why: conditionText(c)}
		}
	}
	ready := meta.FindStatusCondition(st.Conditions, string(rayv1.RayServiceReady))
	switch {
	case ready == nil:
		return doneState{why: "no Ready condition yet"}
	case ready.Status != metav1.ConditionTrue:
		return doneState{why: conditionText(ready)}
	}
	apps := st.ActiveServiceStatus.Applications
	for _, name := range slices.Sorted(maps.Keys(apps)) {
		if apps[name].Status != rayv1.ApplicationStatusEnum.RUNNING {
			return doneState{why: fmt.Sprintf("application %s is %s", name, apps[name].Status)}
		}
	}
	return doneState{done: true}
}

// runningDiffers compares what the spoke says the active RayCluster runs with desired; blocked
// when the RayCluster spec differs and the member's upgrade strategy never replaces it.
func runningDiffers(member, desired *rayv1.RayService) (why string, blocked bool) {
	want, err := rayspec.ClusterSpecHash(&desired.Spec.RayClusterSpec)
	if err != nil {
		return "the RayCluster spec cannot be hashed: " + err.Error(), false
	}
	if got := member.Annotations[labels.RunningClusterHash]; got != want {
		if upgradeNone(&desired.Spec) && got != "" {
			return "the RayCluster spec changed but upgradeStrategy.type is None: the member keeps its running RayCluster " +
				"(KubeRay's semantics); set another upgrade strategy or recreate the RayService there", true
		}
		why := "the active RayCluster does not run this spec yet"
		if pending := pendingText(&member.Status.PendingServiceStatus); pending != "" {
			why += "; " + pending
		}
		return why, false
	}
	if member.Annotations[labels.RunningServeConfigHash] != rayspec.ServeConfigHash(desired.Spec.ServeConfigV2) {
		return "the Serve config is not applied to the active RayCluster yet", false
	}
	return "", false
}

// maxQuotedAppMessage bounds the application message a "why" quotes: Ray's messages may hold
// a whole traceback, and the why ends up in the binding's and the hub's messages.
const maxQuotedAppMessage = 512

// pendingText says how the member's pending RayCluster stands, quoting its first application
// not RUNNING: when a new RayCluster never serves, that is the member's own reason for the
// rollout to wait and stall. Empty when there is no pending RayCluster.
func pendingText(st *rayv1.RayServiceStatus) string {
	if st.RayClusterName == "" {
		return ""
	}
	text := "pending RayCluster " + st.RayClusterName
	for _, name := range slices.Sorted(maps.Keys(st.Applications)) {
		app := st.Applications[name]
		if app.Status == rayv1.ApplicationStatusEnum.RUNNING {
			continue
		}
		text += fmt.Sprintf(": application %s is %s", name, app.Status)
		if app.Message != "" {
			text += ": " + conditions.TruncateTo(app.Message, maxQuotedAppMessage)
		}
		break
	}
	return text
}

// upgradeNone reports whether the RayService's upgrade strategy is None.
func upgradeNone(spec *rayv1.RayServiceSpec) bool {
	return spec.UpgradeStrategy != nil && spec.UpgradeStrategy.Type != nil && *spec.UpgradeStrategy.Type == rayv1.RayServiceUpgradeNone
}

// conditionText is a member condition as a rollout message quotes it.
func conditionText(c *metav1.Condition) string {
	if c.Message == "" {
		return fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason)
	}
	return fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message)
}
