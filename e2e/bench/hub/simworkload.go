package main

// The scale benchmark's fleet and workload (-sim): members labelled by region and GPU, and
// RayServices placed by a mix of policies (1, 2 and 3 clusters, label selectors, GPUs).

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// Member labels of the scale benchmark.
const (
	regionLabel = "bench.rayfleet.io/region"
	gpuLabel    = "bench.rayfleet.io/gpu"
)

// gpuResource is the GPU resource the GPU RayServices ask for and GPU members report.
const gpuResource corev1.ResourceName = "nvidia.com/gpu"

// regions are the members' regions, in turn.
var regions = []string{"us", "eu", "ap"}

// simMemberLabels are member i's labels: its region in turn, and every fourth member has GPUs.
func simMemberLabels(i int) map[string]string {
	return map[string]string{regionLabel: regions[i%len(regions)], gpuLabel: fmt.Sprint(hasGPU(i))}
}

// hasGPU reports whether member i has GPUs.
func hasGPU(i int) bool { return i%4 == 0 }

// simPolicy is one PlacementPolicy of the mix, and how many of every 20 RayServices it places.
type simPolicy struct {
	name     string
	clusters int32
	// selector is a region the members must be in; empty selects every member.
	region string
	// gpu RayServices ask for one GPU per worker, which only GPU members have room for.
	gpu   bool
	share int
}

// simPolicies are the mix, 20 shares in all: 1.6 copies per RayService on average.
var simPolicies = []simPolicy{
	{name: fleetv1alpha1.DefaultPlacementPolicyName, clusters: 1, share: 8},
	{name: "two", clusters: 2, share: 3},
	{name: "three", clusters: 3, share: 2},
	{name: "eu-two", clusters: 2, region: "eu", share: 3},
	{name: "gpu", clusters: 1, gpu: true, share: 2},
	{name: "gpu-us-two", clusters: 2, region: "us", gpu: true, share: 2},
}

// policyOf returns the policy placing RayService i.
func policyOf(i int) simPolicy {
	total := 0
	for _, p := range simPolicies {
		total += p.share
	}
	slot := i % total
	for _, p := range simPolicies {
		if slot < p.share {
			return p
		}
		slot -= p.share
	}
	return simPolicies[0]
}

// copiesOn is how many copies p places in a fleet of members: its clusters, or fewer when
// fewer members match its selector and have GPUs for it.
func (p simPolicy) copiesOn(members int) int {
	return min(int(p.clusters), len(p.eligible(members)))
}

// object is the PlacementPolicy of p in namespace ns.
func (p simPolicy) object(ns string) *fleetv1alpha1.PlacementPolicy {
	// No soak: a first revision is done when its copies are, so the steady state that follows
	// the status phase is not the end of 10,000 soaks.
	noSoak := int32(0)
	pp := &fleetv1alpha1.PlacementPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: p.name},
		Spec: fleetv1alpha1.PlacementPolicySpec{Clusters: &p.clusters,
			Rollout: &fleetv1alpha1.RolloutStrategy{SoakSeconds: &noSoak}},
	}
	if p.region != "" {
		pp.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: map[string]string{regionLabel: p.region}}
	}
	return pp
}

// simRayService is hub RayService i: one worker (0 to 1), with a GPU under a GPU policy,
// naming its policy unless it is the namespace's default.
func simRayService(i int) *rayv1.RayService {
	p := policyOf(i)
	w := raybuilder.MakeRayService(serviceName(i), benchNamespace).ReplicaBounds(0, 1, 1)
	if p.name != fleetv1alpha1.DefaultPlacementPolicyName {
		w = w.Annotation(labels.PlacementPolicy, p.name)
	}
	rs := w.Obj()
	rs.UID, rs.Generation = "", 0
	if p.gpu {
		c := &rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0]
		one := resource.MustParse("1")
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		c.Resources.Requests[gpuResource] = one
		c.Resources.Limits[gpuResource] = one
	}
	return rs
}

// copyDemand is what the harness's reports take off a member's free capacity for each copy it
// holds, as a spoke's would once the copy's Pods are bound; GPU copies take a GPU too.
func copyDemand(gpu bool) corev1.ResourceList {
	out := perCopy.DeepCopy()
	if gpu {
		out[gpuResource] = resource.MustParse("1")
	}
	return out
}

// simCapacity is member i's allocatable capacity: far more than the benchmark places, so that
// capacity rules out only members without GPUs for GPU RayServices.
func simCapacity(i int) corev1.ResourceList {
	room := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("100000"),
		corev1.ResourceMemory: resource.MustParse("100Ti"),
		corev1.ResourcePods:   resource.MustParse("100000"),
	}
	if hasGPU(i) {
		room[gpuResource] = resource.MustParse("10000")
	}
	return room
}
