package fleet

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// hostileHubService is a RayService the hub must refuse to place, and part of the message its
// Ready condition and ValidationFailed event carry.
type hostileHubService struct {
	rs      *rayv1.RayService
	message string
}

// hostileHubServices are hostile RayServices the API server stores as they are; the hub runs
// the spoke's validation on them (shared/validation), so it refuses what every member would.
func hostileHubServices() []hostileHubService {
	bomb := "lol0: &lol0 [lol]\n"
	for i := 1; i <= 9; i++ {
		bomb += fmt.Sprintf("lol%d: &lol%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*lol%d,", i-1), 10), ","))
	}
	manyGroups := raybuilder.MakeRayService("many-groups", ns)
	for i := range validation.MaxWorkerGroups {
		manyGroups.WorkerGroup(fmt.Sprintf("g%d", i), 0)
	}
	overflow := raybuilder.MakeRayService("hosts-overflow", ns).Replicas(0, 4).Obj()
	overflow.Spec.RayClusterSpec.WorkerGroupSpecs[0].NumOfHosts = 1 << 30
	return []hostileHubService{
		{
			rs:      raybuilder.MakeRayService(strings.Repeat("n", validation.MaxRayServiceNameLength+1), ns).Obj(),
			message: "must be no more than 47 characters (got 48)",
		},
		{
			rs:      raybuilder.MakeRayService("huge-config", ns).ServeConfig("applications: []\n#" + strings.Repeat("x", 1<<20)).Obj(),
			message: "spec.serveConfigV2: Too long: is 1048594 bytes",
		},
		{
			rs:      raybuilder.MakeRayService("yaml-bomb", ns).ServeConfig(bomb).Obj(),
			message: "document contains excessive aliasing",
		},
		{
			rs:      raybuilder.MakeRayService("huge-replicas", ns).ReplicaBounds(0, 0, math.MaxInt32).Replicas(0, math.MaxInt32).Obj(),
			message: "asks for 2147483647 worker Pods",
		},
		{rs: overflow, message: "asks for 4294967296 worker Pods"},
		{rs: raybuilder.MakeRayService("negative-replicas", ns).Replicas(0, -1).Obj(), message: "replicas: Invalid value: -1"},
		{rs: manyGroups.Obj(), message: "workerGroupSpecs: Too many: 101"},
	}
}

// TestHubRefusesHostileRayServices applies hostile RayServices and a good one to the hub, all
// under one policy placing on both members: each bad one is Ready=False/ValidationFailed with a
// Warning event naming its problem, placed nowhere and copied to no member; the good one is
// placed on both.
func TestHubRefusesHostileRayServices(t *testing.T) {
	h := startFleet(t)
	g := NewWithT(t)
	ctx := context.Background()
	h.createPolicy(g, "everywhere", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2)})

	bad := hostileHubServices()
	for _, b := range bad {
		rs := b.rs
		rs.UID, rs.Generation = "", 0
		metav1.SetMetaDataAnnotation(&rs.ObjectMeta, labels.PlacementPolicy, "everywhere")
		g.Expect(h.hub.Create(ctx, rs)).To(Succeed(), "create %s", rs.Name)
	}
	h.createRayService(g, "good", "everywhere")

	for _, b := range bad {
		name := b.rs.Name
		g.Eventually(func(g Gomega) {
			rs := h.hubRayService(g, name)
			c := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.RayServiceReady))
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(fleetv1alpha1.ReasonValidationFailed))
			g.Expect(c.Message).To(ContainSubstring(b.message))
			g.Expect(hubEventNote(g, h.hub, name, "ValidationFailed")).To(ContainSubstring(b.message))
		}, timeout, interval).Should(Succeed(), "RayService %s", name)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(h.memberCopy(g, "eu", "good")).NotTo(BeNil())
		g.Expect(h.memberCopy(g, "us", "good")).NotTo(BeNil())
	}, timeout, interval).Should(Succeed())

	g.Consistently(func(g Gomega) {
		for _, b := range bad {
			g.Expect(h.binding(g, b.rs.Name).Spec.Clusters).To(BeEmpty(), "binding of %s", b.rs.Name)
			g.Expect(h.memberCopy(g, "eu", b.rs.Name)).To(BeNil(), "copy of %s on eu", b.rs.Name)
			g.Expect(h.memberCopy(g, "us", b.rs.Name)).To(BeNil(), "copy of %s on us", b.rs.Name)
		}
	}, settle, interval).Should(Succeed())
}

// hubEventNote returns the note of the first event about the hub RayService name with reason.
func hubEventNote(g Gomega, c client.Client, name, reason string) string {
	var list eventsv1.EventList
	g.Expect(c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	for _, e := range list.Items {
		if e.Regarding.Kind == "RayService" && e.Regarding.Name == name && e.Reason == reason {
			return e.Note
		}
	}
	return ""
}
