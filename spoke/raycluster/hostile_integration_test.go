package raycluster

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// TestHostileRayClusters applies RayClusters asking for absurd numbers next to a good one: each
// bad one gets a Warning event naming its problem and no Pod (a replica count of 2^31-1 once
// made the reconciler allocate for every Pod it was asked for), and the good one gets its Pods.
func TestHostileRayClusters(t *testing.T) {
	h := startHarness(t, nil)
	ctx := context.Background()
	g := NewWithT(t)
	ns := h.namespace(t, g, "hostile")

	manyGroups := raybuilder.MakeRayCluster("many-groups", ns)
	for i := range validation.MaxWorkerGroups + 1 {
		manyGroups.WorkerGroup(fmt.Sprintf("g%d", i), 0, 0, 1)
	}
	longName := strings.Repeat("n", validation.MaxRayClusterNameLength+1)
	bad := []struct {
		rc      *rayv1.RayCluster
		reason  string
		message string
	}{
		{
			rc:      raybuilder.MakeRayCluster("huge-replicas", ns).WorkerGroup("g", math.MaxInt32, 0, math.MaxInt32).Obj(),
			reason:  reasonInvalidSpec,
			message: `worker group "g": asks for 2147483647 worker Pods`,
		},
		{
			rc:      raybuilder.MakeRayCluster("hosts-overflow", ns).WorkerGroup("g", 4, 0, 4).NumOfHosts("g", 1<<30).Obj(),
			reason:  reasonInvalidSpec,
			message: `worker group "g": asks for 4294967296 worker Pods`,
		},
		{
			rc:      raybuilder.MakeRayCluster("negative-hosts", ns).WorkerGroup("g", 1, 0, 2).NumOfHosts("g", -1).Obj(),
			reason:  reasonInvalidSpec,
			message: "spec.workerGroupSpecs[0].numOfHosts: Invalid value: -1",
		},
		{
			rc:      manyGroups.Obj(),
			reason:  reasonInvalidSpec,
			message: "spec.workerGroupSpecs: Too many: 101",
		},
		{
			rc:      raybuilder.MakeRayCluster(longName, ns).WorkerGroup("g", 1, 0, 2).Obj(),
			reason:  reasonInvalidMetadata,
			message: "must be no more than 53 characters (got 54)",
		},
	}
	for _, b := range bad {
		g.Expect(h.c.Create(ctx, b.rc)).To(Succeed(), "create %s", b.rc.Name)
	}
	g.Expect(h.c.Create(ctx, raybuilder.MakeRayCluster("good", ns).WorkerGroup("g", 1, 0, 2).Obj())).To(Succeed())

	for _, b := range bad {
		g.Eventually(func(g Gomega) {
			g.Expect(warningNotes(g, h.c, ns, b.rc.Name, b.reason)).To(ContainElement(ContainSubstring(b.message)))
		}, timeout, interval).Should(Succeed(), "RayCluster %s", b.rc.Name)
	}
	g.Eventually(func(g Gomega) {
		g.Expect(h.pods(g, ns, "good", rayv1.HeadNode)).To(HaveLen(1))
		g.Expect(h.pods(g, ns, "good", rayv1.WorkerNode)).To(HaveLen(1))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		for _, b := range bad {
			g.Expect(h.pods(g, ns, b.rc.Name, "")).To(BeEmpty(), "Pods of %s", b.rc.Name)
		}
	}, 2*time.Second, interval).Should(Succeed())
}

// warningNotes returns the messages of the Warning events about the RayCluster name with reason.
func warningNotes(g Gomega, c client.Client, ns, name, reason string) []string {
	var events corev1.EventList
	g.Expect(c.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	var notes []string
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			notes = append(notes, e.Message)
		}
	}
	return notes
}
