package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

func policyWith(mutate func(*fleetv1alpha1.PlacementPolicySpec)) *fleetv1alpha1.PlacementPolicy {
	pp := &fleetv1alpha1.PlacementPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "serve", Name: "p", Generation: 3}}
	if mutate != nil {
		mutate(&pp.Spec)
	}
	return pp
}

func overrideOf(patch string) fleetv1alpha1.ClusterOverride {
	return fleetv1alpha1.ClusterOverride{ClusterSelector: &metav1.LabelSelector{}, Patch: apiextensionsv1.JSON{Raw: []byte(patch)}}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		policy  *fleetv1alpha1.PlacementPolicy
		wantErr string
	}{
		{name: "empty policy", policy: policyWith(nil)},
		{name: "selector and an override", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}
			s.Overrides = []fleetv1alpha1.ClusterOverride{overrideOf(`{"serveConfigV2":"applications: []"}`)}
		})},
		{name: "unknown selector operator", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.ClusterSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "region", Operator: "Near", Values: []string{"eu"}}}}
		}), wantErr: "invalid clusterSelector"},
		{name: "misspelt field in an override", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.Overrides = []fleetv1alpha1.ClusterOverride{overrideOf(`{"servConfigV2":"x"}`)}
		}), wantErr: `overrides: override 0: patched spec is not a valid RayService spec: unknown field "servConfigV2"`},
		{name: "wrong type in the second override", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.Overrides = []fleetv1alpha1.ClusterOverride{overrideOf(`{}`), overrideOf(`{"rayClusterDeletionDelaySeconds":"soon"}`)}
		}), wantErr: "override 1"},
		{name: "a rollout stage's selector that does not parse", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.Rollout = &fleetv1alpha1.RolloutStrategy{Stages: []fleetv1alpha1.RolloutStage{{Name: "canary",
				ClusterSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}}}}
		}), wantErr: "rollout:"},
		{name: "maxUnavailableClusters that is no number or percentage", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.Rollout = &fleetv1alpha1.RolloutStrategy{MaxUnavailableClusters: ptr.To(intstr.FromString("half"))}
		}), wantErr: "rollout:"},
		{name: "maxUnavailableClusters of 0", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.Rollout = &fleetv1alpha1.RolloutStrategy{MaxUnavailableClusters: ptr.To(intstr.FromInt32(0))}
		}), wantErr: "rollout:"},
		{name: "a stage's maxConcurrency of 0%", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.Rollout = &fleetv1alpha1.RolloutStrategy{Stages: []fleetv1alpha1.RolloutStage{{Name: "canary",
				ClusterSelector: &metav1.LabelSelector{}, MaxConcurrency: ptr.To(intstr.FromString("0%"))}}}
		}), wantErr: "rollout:"},
		{name: "stages, percentages and a sorting key", policy: policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
			s.Rollout = &fleetv1alpha1.RolloutStrategy{MaxUnavailableClusters: ptr.To(intstr.FromString("50%")), SortingLabelKey: "region",
				Stages: []fleetv1alpha1.RolloutStage{{Name: "canary", ClusterSelector: &metav1.LabelSelector{
					MatchLabels: map[string]string{"tier": "canary"}}, MaxConcurrency: ptr.To(intstr.FromInt32(1)), Approval: true}}}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.policy)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("Check = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestAccepted(t *testing.T) {
	pp := policyWith(nil)
	ok := Accepted(pp, nil)
	if ok.Status != metav1.ConditionTrue || ok.Reason != fleetv1alpha1.ReasonPolicyValid || ok.ObservedGeneration != 3 {
		t.Errorf("Accepted(nil) = %+v", ok)
	}
	bad := Accepted(pp, errors.New("overrides: override 0: bad"))
	if bad.Status != metav1.ConditionFalse || bad.Reason != fleetv1alpha1.ReasonPolicyInvalid ||
		bad.Message != "overrides: override 0: bad" || bad.ObservedGeneration != 3 {
		t.Errorf("Accepted(err) = %+v", bad)
	}
}

// TestReconciler runs the controller on a real API server: a valid policy is Accepted, an edit
// that breaks an override turns it False with the reason, and fixing it turns it back.
func TestReconciler(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e := envtest.Start(t, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	g.Expect(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "serve"}})).To(Succeed())
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(New(mgr.GetClient(), nil).SetupWithManager(mgr)).To(Succeed())
	envtest.RunManager(t, mgr)

	pp := policyWith(func(s *fleetv1alpha1.PlacementPolicySpec) {
		s.Overrides = []fleetv1alpha1.ClusterOverride{overrideOf(`{"rayClusterDeletionDelaySeconds":30}`)}
	})
	pp.Generation = 0
	g.Expect(e.Client.Create(ctx, pp)).To(Succeed())
	expectAccepted := func(status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			var got fleetv1alpha1.PlacementPolicy
			g.Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(pp), &got)).To(Succeed())
			c := meta.FindStatusCondition(got.Status.Conditions, fleetv1alpha1.ConditionAccepted)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(status))
			g.Expect(c.Reason).To(Equal(reason))
			g.Expect(c.Message).To(ContainSubstring(message))
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}, 20*time.Second, 50*time.Millisecond).Should(Succeed())
	}
	expectAccepted(metav1.ConditionTrue, fleetv1alpha1.ReasonPolicyValid, "can place")

	setPatch := func(patch string) {
		var cur fleetv1alpha1.PlacementPolicy
		g.Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(pp), &cur)).To(Succeed())
		cur.Spec.Overrides[0].Patch.Raw = []byte(patch)
		g.Expect(e.Client.Update(ctx, &cur)).To(Succeed())
	}
	setPatch(`{"rayClusterConfig":{"enableInTreeAutoscalling":true}}`)
	expectAccepted(metav1.ConditionFalse, fleetv1alpha1.ReasonPolicyInvalid, `unknown field "rayClusterConfig.enableInTreeAutoscalling"`)
	setPatch(`{"rayClusterConfig":{"enableInTreeAutoscaling":true}}`)
	expectAccepted(metav1.ConditionTrue, fleetv1alpha1.ReasonPolicyValid, "can place")
}
