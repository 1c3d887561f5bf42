package fleet

import (
	"fmt"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/podsecurity"
)

// podSecurityCondition is the hub RayService's PodSecurityEnforced condition: False while a
// member it is placed on holds its namespace unlabelled because Pods running there break the
// member's level (the MemberCluster's unenforcedNamespaces, see hub/membership), naming the
// members, Pods and checks; nil otherwise, and the condition is then removed.
func podSecurityCondition(hub *rayv1.RayService, placed []string, mcs map[string]*fleetv1alpha1.MemberCluster) *metav1.Condition {
	var parts []string
	for _, name := range slices.Sorted(slices.Values(placed)) {
		mc := mcs[name]
		if mc == nil {
			continue
		}
		for _, u := range mc.Status.UnenforcedNamespaces {
			if u.Name == hub.Namespace {
				parts = append(parts, fmt.Sprintf("cluster %s (level %s): %s", name, podSecurityLevel(mc), strings.Join(u.Violations, "; ")))
			}
		}
	}
	if len(parts) == 0 {
		return nil
	}
	return &metav1.Condition{
		Type: fleetv1alpha1.ConditionPodSecurityEnforced, Status: metav1.ConditionFalse,
		Reason: fleetv1alpha1.ReasonPodsViolateLevel, ObservedGeneration: hub.Generation,
		Message: conditions.Truncate(fmt.Sprintf("namespace %s is not labelled %s, Pods running there break the member's level "+
			"(nothing was moved or deleted): %s", hub.Namespace, podsecurity.EnforceLabel, strings.Join(parts, "; "))),
	}
}
