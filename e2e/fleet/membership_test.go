//go:build e2e

package fleet

import (
	"testing"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// Every member, joined by the real CLI, turn Ready on the hub, keep the labels they were given
// and mirror their spoke's report: nodes, allocatable CPU and GPUs (only the eu member has any).
func TestJoinedMembersBecomeReady(t *testing.T) {
	tests := []struct {
		member  string
		wantCPU string
		wantGPU int64
	}{
		{member: memberUS, wantCPU: "32"},
		{member: memberEU, wantCPU: "64", wantGPU: gpusPerEU * nodesPerMb},
		{member: memberAP, wantCPU: "32"},
	}
	for _, tt := range tests {
		t.Run(tt.member, func(t *testing.T) {
			t.Parallel()
			eventually(t, func(g gomega.Gomega) {
				var mc fleetv1alpha1.MemberCluster
				g.Expect(fleet.Hub.Client.Get(t.Context(), client.ObjectKey{Name: tt.member}, &mc)).To(gomega.Succeed())
				g.Expect(mc.Labels).To(gomega.HaveKeyWithValue(regionKey, tt.member))
				g.Expect(mc.Spec.KubeconfigSecretRef.Name).To(gomega.Equal(tt.member))
				st := mc.Status
				for _, cond := range []string{
					fleetv1alpha1.ConditionJoined, fleetv1alpha1.ConditionReachable,
					fleetv1alpha1.ConditionAgentReady, fleetv1alpha1.ConditionReady,
				} {
					c := meta.FindStatusCondition(st.Conditions, cond)
					g.Expect(c).NotTo(gomega.BeNil(), "condition %s missing", cond)
					g.Expect(c.Status).To(gomega.Equal(metav1.ConditionTrue), "condition %s: %s: %s", cond, c.Reason, c.Message)
					g.Expect(c.ObservedGeneration).To(gomega.Equal(mc.Generation), "condition %s", cond)
				}
				g.Expect(st.Nodes).NotTo(gomega.BeNil())
				g.Expect(*st.Nodes).To(gomega.Equal(fleetv1alpha1.NodeCounts{Total: nodesPerMb, Ready: nodesPerMb}))
				g.Expect(st.Capacity).NotTo(gomega.BeNil())
				cpu := st.Capacity.Allocatable[corev1.ResourceCPU]
				g.Expect(cpu.Cmp(resource.MustParse(tt.wantCPU))).To(gomega.Equal(0), "allocatable CPU %s", cpu.String())
				free := st.Capacity.Free[corev1.ResourceCPU]
				g.Expect(free.Sign()).To(gomega.Equal(1), "free CPU %s", free.String())
				gpus, ok := st.Capacity.Allocatable[localcluster.GPUResource]
				if tt.wantGPU == 0 {
					g.Expect(ok && !gpus.IsZero()).To(gomega.BeFalse(), "allocatable GPUs %s on a CPU-only member", gpus.String())
				} else {
					g.Expect(gpus.Value()).To(gomega.Equal(tt.wantGPU), "allocatable GPUs")
				}
				g.Expect(st.AgentVersion).NotTo(gomega.BeEmpty())
				g.Expect(st.KubernetesVersion).NotTo(gomega.BeEmpty())
				g.Expect(st.LastHeartbeatTime).NotTo(gomega.BeNil())
			})
		})
	}
}
