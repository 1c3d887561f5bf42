package fleet

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/hub/rollout"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/runningreplicas"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// capacityReplicas is the capacity tests' worker group size.
const capacityReplicas = 4

// runCopy plays a member's spoke for a capacity-following rollout: every worker replica and
// Serve replica the copy asks for runs at once (and the Pods of those it no longer asks for are
// gone), reported in the running-replicas annotation, and the copy runs what it carries. It
// returns the copy's worker replicas; 0 without a copy.
func (h *bgTest) runCopy(g Gomega, cluster, name string) int32 {
	rs := h.memberCopy(g, cluster, name)
	if rs == nil {
		return 0
	}
	set, err := rollout.FullSet(&rs.Spec)
	g.Expect(err).NotTo(HaveOccurred())
	workers := ptr.Deref(rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas, 0)
	report := runningreplicas.Replicas{
		Workers: map[string]int32{raybuilder.RayServiceWorkerGroup: workers},
		Held:    map[string]int32{raybuilder.RayServiceWorkerGroup: workers},
		Serve:   map[string]int32{},
	}
	for key, d := range set.Serve {
		report.Serve[key] = d.Full(set.TargetCapacity)
	}
	value, err := runningreplicas.Format(report)
	g.Expect(err).NotTo(HaveOccurred())
	if rs.Annotations[labels.RunningReplicas] != value {
		rs.Annotations[labels.RunningReplicas] = value
		g.Expect(h.members[cluster].Update(context.Background(), rs)).To(Succeed())
	}
	h.serveAt(g, cluster, name)
	return workers
}

// startCapacity starts two members, a BlueGreen policy whose capacity follows the traffic
// (surge 25%) and a RayService "svc" under it with one worker group of capacityReplicas.
func startCapacity(t *testing.T) (*bgTest, Gomega) {
	h := startBlueGreen(t, "a", "b")
	g := NewWithT(t)
	policy := blueGreenPolicy(true)
	policy.Rollout.BlueGreen.Capacity = &fleetv1alpha1.BlueGreenCapacity{SurgePercent: ptr.To[int32](25)}
	h.createPolicy(g, "bg", policy)
	rs := raybuilder.MakeRayService("svc", ns).Annotation(labels.PlacementPolicy, "bg").Replicas(0, capacityReplicas).Obj()
	rs.UID, rs.Generation = "", 0
	g.Expect(h.hub.Create(context.Background(), rs)).To(Succeed())
	return h, g
}

// A capacity-following BlueGreen rollout on real API servers: green starts at the surge beside
// the whole of blue, each step gives green room one step ahead of its weight and takes it from
// blue behind, the traffic moves only onto what green runs, and the fleet never asks for more
// than the set plus its surge, blue's leaving copy included (counted while it stands: given its
// whole set back on the way out, it would break the bound).
func TestFleetBlueGreenCapacity(t *testing.T) {
	h, g := startCapacity(t)

	t.Log("the first revision runs its whole set on one member")
	blue := h.firstRevision(g, "svc", true)
	g.Eventually(func(g Gomega) {
		g.Expect(h.runCopy(g, blue, "svc")).To(Equal(int32(capacityReplicas)))
	}, timeout, interval).Should(Succeed())
	g.Expect(h.memberCopy(g, blue, "svc").Annotations).NotTo(HaveKey(labels.BaseSpecHash))

	t.Log("a new spec: green starts at the surge, blue keeps its whole set and all of the traffic")
	h.setImage(g, "svc", "rayproject/ray:2.99.0")
	green := h.green(g, "svc", blue)
	g.Eventually(func(g Gomega) {
		bg := h.blueGreen(g, "svc")
		g.Expect(bg.Capacity).To(Equal(&fleetv1alpha1.BlueGreenCapacityStatus{Direction: fleetv1alpha1.CapacityForward, Green: 25, Blue: 100}))
		c := h.memberCopy(g, green, "svc")
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Spec.RayClusterSpec.WorkerGroupSpecs[0].Replicas).To(Equal(ptr.To[int32](1)))
		g.Expect(c.Spec.ServeConfigV2).To(ContainSubstring("target_capacity: 25"))
		g.Expect(c.Annotations).To(HaveKey(labels.BaseSpecHash))
	}, timeout, interval).Should(Succeed())
	g.Expect(h.weights(g)).To(Equal(map[string]int32{blue: 10000}))

	t.Log("step by step to green, the fleet within 4+1 replicas, no weight ahead of what green runs")
	steps, violations := h.driveCapacity(g, blue, green, func(g Gomega, b *fleetv1alpha1.RayServiceBinding) {
		g.Expect(b.Spec.Clusters).To(Equal([]string{green}))
		g.Expect(b.Status.Rollout.BlueGreen).To(BeNil())
	})
	t.Logf("steps: %q", steps)
	g.Expect(violations).To(BeEmpty())
	// Steps of 25% (the surge bounds the policy's 50%): green grows ahead, blue shrinks behind.
	g.Expect(steps).To(ContainElements(
		"Forward: green 25% of the traffic, capacity green 25% blue 100%",
		"Forward: green 25% of the traffic, capacity green 50% blue 75%",
		"Forward: green 50% of the traffic, capacity green 75% blue 50%",
		"Forward: green 100% of the traffic, capacity green 100% blue 0%"))
	g.Expect(h.weights(g)).To(Equal(map[string]int32{green: 10000}))
}

// driveCapacity plays both colours' spokes and the gateway, and moves the clock an interval at
// a time, until done holds of the binding. It returns each distinct step the binding recorded,
// and every moment the copies asked for more than the set plus its surge or a colour weighed
// more than it ran.
func (h *bgTest) driveCapacity(g Gomega, blue, green string, done func(Gomega, *fleetv1alpha1.RayServiceBinding)) (steps, violations []string) {
	g.Eventually(func(g Gomega) {
		asked := map[string]int32{blue: h.runCopy(g, blue, "svc"), green: h.runCopy(g, green, "svc")}
		if asked[blue]+asked[green] > capacityReplicas+1 {
			violations = append(violations, fmt.Sprintf("the copies ask for %v replicas", asked))
		}
		if bg := h.blueGreen(g, "svc"); bg != nil && bg.Capacity != nil {
			step := fmt.Sprintf("%s: green %d%% of the traffic, capacity green %d%% blue %d%%",
				bg.Capacity.Direction, bg.GreenPercent, bg.Capacity.Green, bg.Capacity.Blue)
			if len(steps) == 0 || steps[len(steps)-1] != step {
				steps = append(steps, step)
			}
		}
		weights := h.weights(g)
		for _, c := range []string{blue, green} {
			// A colour's weight moves onto replicas that run, never ahead of them; a revert
			// (not played here) is the one exception.
			if w := weights[c]; h.memberCopy(g, c, "svc") != nil && w*capacityReplicas > 10000*asked[c] {
				violations = append(violations, fmt.Sprintf("%s weighs %d/10000 on %d of %d replicas", c, w, asked[c], capacityReplicas))
			}
		}
		h.accept(g)
		h.clk.Step(bgIntervalSeconds * time.Second)
		done(g, h.binding(g, "svc"))
	}, 4*timeout, interval).Should(Succeed())
	return steps, violations
}

// An undo of a capacity-following rollout moves back the same way: blue grows first, the
// traffic returns only onto what blue runs, green shrinks behind it and leaves.
func TestFleetBlueGreenCapacityUndo(t *testing.T) {
	h, g := startCapacity(t)
	blue := h.firstRevision(g, "svc", true)
	image := h.hubRayService(g, "svc").Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image

	h.setImage(g, "svc", "rayproject/ray:2.99.0")
	green := h.green(g, "svc", blue)
	forward, violations := h.driveCapacity(g, blue, green, func(g Gomega, b *fleetv1alpha1.RayServiceBinding) {
		g.Expect(b.Status.Rollout.BlueGreen).NotTo(BeNil())
		g.Expect(b.Status.Rollout.BlueGreen.GreenPercent).To(BeNumerically(">=", 50))
	})
	t.Logf("forward: %q", forward)

	t.Log("undo at half of the traffic")
	h.setImage(g, "svc", image)
	back, more := h.driveCapacity(g, blue, green, func(g Gomega, b *fleetv1alpha1.RayServiceBinding) {
		g.Expect(b.Spec.Clusters).To(Equal([]string{blue}))
		g.Expect(b.Status.Rollout.BlueGreen).To(BeNil())
	})
	t.Logf("back: %q", back)
	g.Expect(slices.Concat(violations, more)).To(BeEmpty())
	g.Expect(back).To(ContainElement(HavePrefix("Undo:")))
	g.Expect(back).NotTo(ContainElement(HavePrefix("Revert:")), "an undo whose blue grows back needs no revert")
	g.Expect(h.weights(g)).To(Equal(map[string]int32{blue: 10000}))
	g.Expect(h.binding(g, "svc").Status.Rollout.FailedRevision).To(BeEmpty(), "an undo fails no revision")
}
