//go:build e2e

package fleet

import (
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Every member's hub policy guard (installed by `rayfleet join` with the defaults) refuses a
// RayService that asks for what a member did not allow: the hub RayService applied to the hub
// creates nothing on any member, and the hub's MemberRefused condition names each member and
// the rule. What Pod Security baseline forbids, the members' reported level (baseline) keeps
// off them before the guard is asked: the binding's Placed condition names each member and
// the check instead. A plain RayService on the same fleet, applied alongside, still runs on
// both.
func TestHubPolicyGuardRefusesWhatMembersDidNotAllow(t *testing.T) {
	t.Parallel()
	const ns = "guard"
	createNamespace(t, ns)
	createPolicy(t, ns, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), ClusterSelector: usOrEU})

	cases := []struct {
		// check, when set, is the Pod Security check placement names instead of the guard's
		// rule.
		name, rule, check string
		mutate            func(rs *rayv1.RayService)
	}{
		{"privileged", "privileged", "privileged", func(rs *rayv1.RayService) {
			head(rs).SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		}},
		{"privileged-init", "privileged", "privileged", func(rs *rayv1.RayService) {
			spec := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec
			spec.InitContainers = append(spec.InitContainers, corev1.Container{Name: "setup", Image: "busybox",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}})
		}},
		{"hostnetwork", "hostNamespaces", "host namespaces", func(rs *rayv1.RayService) {
			rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.HostNetwork = true
		}},
		{"hostpath", "hostPath", "hostPath volumes", func(rs *rayv1.RayService) {
			spec := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "root", VolumeSource: corev1.VolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
		}},
		{"sysadmin", "capabilities", "non-default capabilities", func(rs *rayv1.RayService) {
			head(rs).SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}}}
		}},
		// The four fields a new user's RayService ran with on every member before the guard
		// held all of baseline: each is a check of its own; placement names the first.
		{"four-fields", "seccomp", "seccompProfile", func(rs *rayv1.RayService) {
			pod := &rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
			pod.SecurityContext = &corev1.PodSecurityContext{
				SeccompProfile:  &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
				SELinuxOptions:  &corev1.SELinuxOptions{Type: "spc_t"},
				AppArmorProfile: &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined},
				Sysctls:         []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}},
			}
		}},
		{"selinux", "seLinux", "seLinuxOptions", func(rs *rayv1.RayService) {
			head(rs).SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}}
		}},
		{"apparmor-annotation", "appArmor", "forbidden AppArmor profile", func(rs *rayv1.RayService) {
			tmpl := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template
			tmpl.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/ray-worker": "unconfined"}
		}},
		{"sysctl", "sysctls", "forbidden sysctls", func(rs *rayv1.RayService) {
			rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.SecurityContext = &corev1.PodSecurityContext{
				Sysctls: []corev1.Sysctl{{Name: "kernel.msgmax", Value: "65536"}}}
		}},
		{"procmount", "procMount", "procMount", func(rs *rayv1.RayService) {
			head(rs).SecurityContext = &corev1.SecurityContext{ProcMount: ptr.To(corev1.UnmaskedProcMount)}
		}},
		{"hostport", "hostPorts", "hostPort", func(rs *rayv1.RayService) {
			head(rs).Ports = append(head(rs).Ports, corev1.ContainerPort{Name: "host", ContainerPort: 9999, HostPort: 9999})
		}},
		{"hostprobe", "hostProbes", "probe or lifecycle host", func(rs *rayv1.RayService) {
			head(rs).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Host: "169.254.169.254", Path: "/", Port: intstr.FromInt32(80)}}}
		}},
		{"serviceaccount", "serviceAccount", "", func(rs *rayv1.RayService) {
			rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.ServiceAccountName = "cluster-admin-sa"
		}},
		{"externalips", "externalIPs", "", func(rs *rayv1.RayService) {
			rs.Spec.ServeService = &corev1.Service{Spec: corev1.ServiceSpec{ExternalIPs: []string{"203.0.113.7"}}}
		}},
	}

	for _, tc := range cases {
		rs := newHubRayService(ns, tc.name, "both")
		tc.mutate(rs)
		applyHubRayService(t, rs)
	}
	createHubRayService(t, ns, "allowed", "both")

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			eventually(t, func(g gomega.Gomega) {
				hub := hubRayService(g, ns, tc.name)
				if tc.check != "" {
					placed := meta.FindStatusCondition(binding(g, ns, tc.name).Status.Conditions, fleetv1alpha1.ConditionPlaced)
					g.Expect(placed).NotTo(gomega.BeNil(), "Placed condition")
					g.Expect(placed.Reason).To(gomega.Equal(fleetv1alpha1.ReasonNoClusterFits))
					for _, member := range []string{memberUS, memberEU} {
						g.Expect(placed.Message).To(gomega.ContainSubstring(fmt.Sprintf(
							"%s: Pod Security level baseline enforced, the Pods need privileged: ", member)))
					}
					g.Expect(placed.Message).To(gomega.ContainSubstring(tc.check))
					g.Expect(hubReady(hub)).To(gomega.BeFalse(), "an unplaced RayService is not Ready")
					return
				}
				refused := meta.FindStatusCondition(hub.Status.Conditions, fleetv1alpha1.ConditionMemberRefused)
				g.Expect(refused).NotTo(gomega.BeNil(), "MemberRefused condition")
				g.Expect(refused.Status).To(gomega.Equal(metav1.ConditionTrue))
				for _, member := range []string{memberUS, memberEU} {
					g.Expect(refused.Message).To(gomega.ContainSubstring(fmt.Sprintf("%s: hubPolicy/%s", member, tc.rule)))
				}
				g.Expect(hubReady(hub)).To(gomega.BeFalse(), "a refused RayService is not Ready")
			})
			g := gomega.NewWithT(t)
			for _, member := range []string{memberUS, memberEU} {
				g.Expect(memberRayService(g, member, ns, tc.name)).To(gomega.BeNil(), "copy on %s", member)
				var rcs rayv1.RayClusterList
				g.Expect(fleet.Members[member].Client.List(t.Context(), &rcs, client.InNamespace(ns))).To(gomega.Succeed())
				for _, rc := range rcs.Items {
					g.Expect(strings.HasPrefix(rc.Name, tc.name+"-")).To(gomega.BeFalse(), "RayCluster %s on %s", rc.Name, member)
				}
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		eventually(t, func(g gomega.Gomega) {
			hub := hubRayService(g, ns, "allowed")
			g.Expect(hubReady(hub)).To(gomega.BeTrue(), "the allowed RayService is Ready")
			g.Expect(meta.FindStatusCondition(hub.Status.Conditions, fleetv1alpha1.ConditionMemberRefused)).To(gomega.BeNil())
			for _, member := range []string{memberUS, memberEU} {
				g.Expect(memberRayService(g, member, ns, "allowed")).NotTo(gomega.BeNil(), "copy on %s", member)
			}
		})
	})
}

// head is the head group's Ray container.
func head(rs *rayv1.RayService) *corev1.Container {
	return &rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
}
