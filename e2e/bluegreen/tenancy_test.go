//go:build e2e

package bluegreen

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
)

// Team B aims its policy's traffic at team A's Gateway, whose listener takes routes from team
// A's namespace only (allowedRoutes Same) and team A's hostname. The hub writes team B's route
// in team B's namespace, where Traefik does not attach it, and team B's RayService says why in
// the Gateway's words; nothing the hub wrote for team B is in team A's namespace.
func TestTenancyRouteStaysWithItsTeam(t *testing.T) {
	const teamA, teamB, name, hostname = "team-a", "team-b", "svc", "a.example.com"
	waitMembersReady(t)
	ctx := t.Context()
	hub := fleet.Hub.Client
	var shared gwv1.Gateway
	if err := hub.Get(ctx, client.ObjectKey{Namespace: localfleet.GatewayNamespace, Name: localfleet.GatewayName}, &shared); err != nil {
		t.Fatal(err)
	}
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: teamA}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// Team A's Gateway, on the port Traefik serves (that of the fleet's Gateway).
	gw := &gwv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: "edge"},
		Spec: gwv1.GatewaySpec{
			GatewayClassName: localfleet.GatewayClassName,
			Listeners: []gwv1.Listener{{
				Name: "http", Port: shared.Spec.Listeners[0].Port, Protocol: gwv1.HTTPProtocolType,
				Hostname:      ptr.To(gwv1.Hostname(hostname)),
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: ptr.To(gwv1.NamespacesFromSame)}},
			}},
		},
	}
	if err := hub.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := hub.Delete(context.Background(), gw); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Gateway %s/%s: %v", teamA, gw.Name, err)
		}
	})

	spec := fleetv1alpha1.PlacementPolicySpec{
		Clusters: ptr.To[int32](1),
		Traffic: &fleetv1alpha1.TrafficSpec{
			ParentRef: fleetv1alpha1.TrafficParentRef{Namespace: teamA, Name: gw.Name},
			Hostnames: []string{hostname}, PathPrefix: "/",
		},
	}
	setUp(t, teamB, name, spec)

	eventuallyFor(t, 2*time.Minute, func(g gomega.Gomega) {
		c := trafficShifting(g, teamB, name)
		g.Expect(c).NotTo(gomega.BeNil())
		g.Expect(c.Status).To(gomega.Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(gomega.Equal(string(gwv1.RouteReasonNotAllowedByListeners)), "TrafficShifting: %s", c.Message)
		g.Expect(c.Message).To(gomega.ContainSubstring("the Gateway team-a/edge does not admit the route team-b/svc"))
	})
	// The route is team B's, in team B's namespace, and the gateway did not attach it.
	var route gwv1.HTTPRoute
	if err := hub.Get(ctx, client.ObjectKey{Namespace: teamB, Name: name}, &route); err != nil {
		t.Fatalf("team B's route: %v", err)
	}
	for _, p := range route.Status.Parents {
		if acc := meta.FindStatusCondition(p.Conditions, string(gwv1.RouteConditionAccepted)); acc != nil && acc.Status == metav1.ConditionTrue {
			t.Errorf("team B's route accepted by %s/%s: %+v", ptr.Deref(p.ParentRef.Namespace, ""), p.ParentRef.Name, acc)
		}
	}
	origin := client.MatchingLabels{labels.OriginNamespace: teamB, labels.OriginName: name}
	var inA gwv1.HTTPRouteList
	var servicesInA corev1.ServiceList
	if err := hub.List(ctx, &inA, client.InNamespace(teamA), origin); err != nil {
		t.Fatal(err)
	}
	if err := hub.List(ctx, &servicesInA, client.InNamespace(teamA), origin); err != nil {
		t.Fatal(err)
	}
	if len(inA.Items)+len(servicesInA.Items) != 0 {
		t.Errorf("the hub wrote %d routes and %d Services for team B in team A's namespace", len(inA.Items), len(servicesInA.Items))
	}
}
