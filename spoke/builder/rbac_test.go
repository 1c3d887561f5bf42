package builder

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestAutoscalerRBAC(t *testing.T) {
	long := "abc9" + strings.Repeat("x", 49)
	tests := []struct {
		name     string
		cluster  *rayv1.RayCluster
		wantSA   string
		wantRole string
		userSA   bool
	}{
		{name: "named after the cluster", cluster: newCluster("rc").Obj(), wantSA: "rc", wantRole: "rc"},
		{
			name:     "the head template's ServiceAccount",
			cluster:  newCluster("rc").Head(func(h *rayv1.HeadGroupSpec) { h.Template.Spec.ServiceAccountName = "my-sa" }).Obj(),
			wantSA:   "my-sa",
			wantRole: "rc",
			userSA:   true,
		},
		{name: "a leading digit is replaced", cluster: newCluster("1rc").Obj(), wantSA: "rrc", wantRole: "rrc"},
		{
			name:     "long names keep their last 50 characters and must not start with a digit",
			cluster:  newCluster(long).Obj(),
			wantSA:   "r" + strings.Repeat("x", 49),
			wantRole: "r" + strings.Repeat("x", 49),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := tt.cluster
			owner := []metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: rc.Name, UID: rc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
			l := map[string]string{labels.Cluster: rc.Name, labels.AppName: "kuberay", labels.CreatedBy: "kuberay-operator"}
			meta := func(name string) metav1.ObjectMeta {
				return metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: l, OwnerReferences: owner}
			}
			if UserProvidesServiceAccount(rc) != tt.userSA {
				t.Errorf("UserProvidesServiceAccount = %v, want %v", !tt.userSA, tt.userSA)
			}
			if diff := cmp.Diff(&corev1.ServiceAccount{ObjectMeta: meta(tt.wantSA)}, AutoscalerServiceAccount(rc)); diff != "" {
				t.Errorf("ServiceAccount (-want +got):\n%s", diff)
			}
			wantRole := &rbacv1.Role{ObjectMeta: meta(tt.wantRole), Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "patch"}},
				{APIGroups: []string{""}, Resources: []string{"pods/resize"}, Verbs: []string{"patch"}},
				{APIGroups: []string{"ray.io"}, Resources: []string{"rayclusters"}, ResourceNames: []string{rc.Name}, Verbs: []string{"get", "patch"}},
			}}
			if diff := cmp.Diff(wantRole, AutoscalerRole(rc)); diff != "" {
				t.Errorf("Role (-want +got):\n%s", diff)
			}
			wantBinding := &rbacv1.RoleBinding{
				ObjectMeta: meta(tt.wantRole),
				Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: tt.wantSA, Namespace: "ns"}},
				RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: tt.wantRole},
			}
			if diff := cmp.Diff(wantBinding, AutoscalerRoleBinding(rc)); diff != "" {
				t.Errorf("RoleBinding (-want +got):\n%s", diff)
			}
			rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
			if got := mustHead(t, rc, DefaultOptions()).Spec.ServiceAccountName; got != tt.wantSA {
				t.Errorf("head Pod runs as %q, want the bound ServiceAccount %q", got, tt.wantSA)
			}
		})
	}
}
