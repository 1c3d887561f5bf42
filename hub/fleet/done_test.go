package fleet

import (
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

func TestDoneFor(t *testing.T) {
	const rev = "svc-abc"
	desired := raybuilder.MakeRayService("svc", "ns").Obj()
	desired.Annotations = map[string]string{labels.SpecHash: "h1", labels.Revision: rev}
	clusterHash, err := rayspec.ClusterSpecHash(&desired.Spec.RayClusterSpec)
	if err != nil {
		t.Fatal(err)
	}
	// running is a member copy that runs desired in every respect.
	running := func() *rayv1.RayService {
		m := desired.DeepCopy()
		m.Generation = 3
		m.Annotations = map[string]string{
			labels.SpecHash: "h1", labels.Revision: rev,
			labels.RunningClusterHash:     clusterHash,
			labels.RunningServeConfigHash: rayspec.ServeConfigHash(desired.Spec.ServeConfigV2),
		}
		m.Status.ObservedGeneration = 3
		m.Status.ActiveServiceStatus.RayClusterName = "svc-x1"
		m.Status.ActiveServiceStatus.Applications = map[string]rayv1.AppStatus{"fruit": {Status: rayv1.ApplicationStatusEnum.RUNNING}}
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionTrue, Reason: "Ready"})
		return m
	}
	with := func(mutate func(m *rayv1.RayService)) *rayv1.RayService {
		m := running()
		mutate(m)
		return m
	}
	tests := []struct {
		name        string
		member      *rayv1.RayService
		desired     *rayv1.RayService
		wantDone    bool
		wantWhy     string
		wantBlocked bool
	}{
		{name: "runs the revision in every respect", member: running(), wantDone: true},
		{name: "no copy", member: nil, wantWhy: "no copy yet"},
		{name: "another revision", member: with(func(m *rayv1.RayService) { m.Annotations[labels.Revision] = "svc-old" }),
			wantWhy: "revision svc-abc is being applied"},
		{name: "generation not observed", member: with(func(m *rayv1.RayService) { m.Generation = 4 }),
			wantWhy: "is being applied"},
		{name: "active cluster built from another spec", member: with(func(m *rayv1.RayService) { m.Annotations[labels.RunningClusterHash] = "old" }),
			wantWhy: "the active RayCluster does not run this spec yet"},
		{name: "new cluster failing, in the member's words", member: with(func(m *rayv1.RayService) {
			m.Annotations[labels.RunningClusterHash] = "old"
			m.Status.PendingServiceStatus.RayClusterName = "svc-y2"
			m.Status.PendingServiceStatus.Applications = map[string]rayv1.AppStatus{
				"apple": {Status: rayv1.ApplicationStatusEnum.RUNNING},
				"fruit": {Status: rayv1.ApplicationStatusEnum.DEPLOY_FAILED, Message: "replicas failed to start"},
			}
		}), wantWhy: "the active RayCluster does not run this spec yet; pending RayCluster svc-y2: application fruit is DEPLOY_FAILED: replicas failed to start"},
		{name: "new cluster not serving yet", member: with(func(m *rayv1.RayService) {
			m.Annotations[labels.RunningClusterHash] = "old"
			m.Status.PendingServiceStatus.RayClusterName = "svc-y2"
		}), wantWhy: "the active RayCluster does not run this spec yet; pending RayCluster svc-y2"},
		{name: "no running hash reported yet", member: with(func(m *rayv1.RayService) { delete(m.Annotations, labels.RunningClusterHash) }),
			wantWhy: "the active RayCluster does not run this spec yet"},
		{name: "upgradeStrategy None never replaces the running cluster",
			member: with(func(m *rayv1.RayService) { m.Annotations[labels.RunningClusterHash] = "old" }),
			desired: func() *rayv1.RayService {
				d := desired.DeepCopy()
				d.Spec.UpgradeStrategy = &rayv1.RayServiceUpgradeStrategy{Type: ptr.To(rayv1.RayServiceUpgradeNone)}
				return d
			}(),
			wantWhy: "upgradeStrategy.type is None", wantBlocked: true},
		{name: "serve config not applied", member: with(func(m *rayv1.RayService) { m.Annotations[labels.RunningServeConfigHash] = "old" }),
			wantWhy: "the Serve config is not applied"},
		{name: "pending cluster", member: with(func(m *rayv1.RayService) { m.Status.PendingServiceStatus.RayClusterName = "svc-y2" }),
			wantWhy: "pending RayCluster svc-y2"},
		{name: "upgrade in progress", member: with(func(m *rayv1.RayService) {
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: string(rayv1.UpgradeInProgress), Status: metav1.ConditionTrue, Reason: "BothActivePendingClustersExist"})
		}), wantWhy: "UpgradeInProgress=True (BothActivePendingClustersExist)"},
		{name: "rollback in progress", member: with(func(m *rayv1.RayService) {
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: string(rayv1.RollbackInProgress), Status: metav1.ConditionTrue, Reason: "Rollback"})
		}), wantWhy: "RollbackInProgress=True"},
		{name: "not Ready, in the member's words", member: with(func(m *rayv1.RayService) {
			meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: string(rayv1.RayServiceReady), Status: metav1.ConditionFalse,
				Reason: "Initializing", Message: "RayService is initializing"})
		}), wantWhy: "Ready=False (Initializing: RayService is initializing)"},
		{name: "an application not RUNNING", member: with(func(m *rayv1.RayService) {
			m.Status.ActiveServiceStatus.Applications["fruit"] = rayv1.AppStatus{Status: rayv1.ApplicationStatusEnum.DEPLOYING}
		}), wantWhy: "application fruit is DEPLOYING"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := desired
			if tt.desired != nil {
				d = tt.desired
			}
			got := doneFor(tt.member, d, rev, servingState(tt.member))
			if got.done != tt.wantDone || got.blocked != tt.wantBlocked || !strings.Contains(got.why, tt.wantWhy) {
				t.Errorf("doneFor() = %+v, want done=%v blocked=%v why containing %q", got, tt.wantDone, tt.wantBlocked, tt.wantWhy)
			}
		})
	}
}
