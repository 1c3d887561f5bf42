package fleet

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rayfleet/rayfleet/hub/traffic"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestRouteConditions(t *testing.T) {
	key := types.NamespacedName{Namespace: "team-b", Name: "svc"}
	spec := &fleetv1alpha1.TrafficSpec{ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: "team-a", Name: "edge"}}
	forbidden := fmt.Errorf("applying HTTPRoute svc in namespace team-b: %w",
		apierrors.NewForbidden(schema.GroupResource{Group: "gateway.networking.k8s.io", Resource: "httproutes"}, "svc", errors.New("no Role")))
	legacy := &types.NamespacedName{Namespace: "team-a", Name: "team-b-svc"}
	tests := []struct {
		name         string
		got          func() (reason, message string)
		wantReason   string
		wantMessages []string
	}{
		{
			name: "no rights in the RayService's namespace: Forbidden, saying where and how to grant them",
			got: func() (string, string) {
				c := routeErrorCondition(key, forbidden)
				return c.Reason, c.Message
			},
			wantReason:   fleetv1alpha1.ReasonTrafficForbidden,
			wantMessages: []string{"namespace team-b of the traffic cluster", "traffic.namespaces", "--traffic-namespace", "no Role"},
		},
		{
			name: "any other error: RouteNotApplied in the API server's words",
			got: func() (string, string) {
				c := routeErrorCondition(key, errors.New("traffic cluster c: not engaged"))
				return c.Reason, c.Message
			},
			wantReason:   fleetv1alpha1.ReasonRouteNotApplied,
			wantMessages: []string{"traffic cluster c: not engaged"},
		},
		{
			name: "the listeners do not admit the route: the gateway's reason and words",
			got: func() (string, string) {
				c := notAdmittedCondition(key, spec, traffic.State{Exists: true, Refused: true, Reason: "NotAllowedByListeners",
					Message: "gateway controller traefik did not accept the route: NotAllowedByListeners: no listener allows it"}, nil)
				return c.Reason, c.Message
			},
			wantReason:   "NotAllowedByListeners",
			wantMessages: []string{"the Gateway team-a/edge does not admit the route team-b/svc", "no listener allows it"},
		},
		{
			name: "while the earlier route stays, the message says so",
			got: func() (string, string) {
				c := notAdmittedCondition(key, spec, traffic.State{Exists: true, Refused: true, Reason: "NoMatchingListenerHostname"}, legacy)
				return c.Reason, c.Message
			},
			wantReason:   "NoMatchingListenerHostname",
			wantMessages: []string{"the earlier route team-a/team-b-svc stays until the gateway accepts"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, message := tt.got()
			if reason != tt.wantReason {
				t.Errorf("reason %q, want %q", reason, tt.wantReason)
			}
			for _, want := range tt.wantMessages {
				if !strings.Contains(message, want) {
					t.Errorf("message %q does not contain %q", message, want)
				}
			}
		})
	}
}
