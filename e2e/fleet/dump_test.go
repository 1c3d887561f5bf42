//go:build e2e

package fleet

import (
	"context"
	"fmt"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// logStateOnFailure logs, when t has failed, what the hub and the members say of the hub
// RayService ns/name: a timed-out Eventually shows only its last expectation, and a loaded CI
// machine is where such timeouts happen. Register it after the RayService's deletion so that
// it runs before it.
func logStateOnFailure(t *testing.T, ns, name string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx, key := context.Background(), client.ObjectKey{Namespace: ns, Name: name}
		var b strings.Builder
		var rs rayv1.RayService
		if err := fleet.Hub.Client.Get(ctx, key, &rs); err == nil {
			fmt.Fprintf(&b, "hub RayService: %s\n", conditionsLine(rs.Status.Conditions))
		}
		var rsb fleetv1alpha1.RayServiceBinding
		if err := fleet.Hub.Client.Get(ctx, key, &rsb); err == nil {
			fmt.Fprintf(&b, "binding: clusters %v; %s\n", rsb.Spec.Clusters, conditionsLine(rsb.Status.Conditions))
			for _, c := range rsb.Status.Clusters {
				fmt.Fprintf(&b, "  cluster %s: %s\n", c.Name, conditionsLine(c.Conditions))
			}
			for _, r := range rsb.Status.Refusals {
				fmt.Fprintf(&b, "  refusal: %+v\n", r)
			}
		}
		var members fleetv1alpha1.MemberClusterList
		if err := fleet.Hub.Client.List(ctx, &members); err == nil {
			for _, m := range members.Items {
				fmt.Fprintf(&b, "member %s: %s\n", m.Name, conditionsLine(m.Status.Conditions))
			}
		}
		for member, c := range fleet.Members {
			var copy rayv1.RayService
			if err := c.Client.Get(ctx, key, &copy); err == nil {
				fmt.Fprintf(&b, "copy on %s: %s\n", member, conditionsLine(copy.Status.Conditions))
			}
		}
		t.Logf("state of %s/%s at failure:\n%s", ns, name, b.String())
	})
}

func conditionsLine(conditions []metav1.Condition) string {
	parts := make([]string, 0, len(conditions))
	for _, c := range conditions {
		parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}
