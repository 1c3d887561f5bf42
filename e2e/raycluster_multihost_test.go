//go:build e2e

package e2e

import (
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// replicaGroup is one multi-host replica: its name, index and Pods by host index.
type replicaGroup struct {
	index string
	hosts map[string]types.UID
}

// replicaGroups groups a worker group's live Pods by ray.io/worker-group-replica-name.
func replicaGroups(g gomega.Gomega, key types.NamespacedName, group string) map[string]replicaGroup {
	out := map[string]replicaGroup{}
	for _, p := range rayPods(g, key, group) {
		name := p.Labels[labels.WorkerReplicaName]
		g.Expect(name).NotTo(gomega.BeEmpty(), "Pod %s has %s", p.Name, labels.WorkerReplicaName)
		rg, ok := out[name]
		if !ok {
			rg = replicaGroup{index: p.Labels[labels.WorkerReplicaIndex], hosts: map[string]types.UID{}}
		}
		g.Expect(p.Labels[labels.WorkerReplicaIndex]).To(gomega.Equal(rg.index), "one replica index per replica, Pod %s", p.Name)
		rg.hosts[p.Labels[labels.HostIndex]] = p.UID
		out[name] = rg
	}
	return out
}

// expectReplicaGroups asserts n complete replicas of two hosts with indices 0..n-1.
func expectReplicaGroups(g gomega.Gomega, groups map[string]replicaGroup, n int) {
	g.Expect(groups).To(gomega.HaveLen(n), "replica groups")
	indices := []string{}
	for name, rg := range groups {
		g.Expect(rg.hosts).To(gomega.HaveLen(2), "hosts of replica %s", name)
		g.Expect(rg.hosts).To(gomega.HaveKey("0"))
		g.Expect(rg.hosts).To(gomega.HaveKey("1"))
		indices = append(indices, rg.index)
	}
	g.Expect(indices).To(gomega.ConsistOf("0", "1"))
}

// A worker group with numOfHosts=2 is made of replicas of two Pods each, labelled with the
// replica's name and index and the Pod's host index; a replica lives and dies as a whole.
func TestRayClusterMultiHostGroup(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayCluster(t, raybuilder.MakeRayCluster("mh", ns).WorkerGroup("tpu", 2, 0, 4).NumOfHosts("tpu", 2).Obj())
	expectReady(t, key, 4)

	g := gomega.NewWithT(t)
	rc := getRayCluster(g, key)
	g.Expect(rc.Status.DesiredWorkerReplicas).To(gomega.Equal(int32(4)), "desired counts Pods, not replicas")
	svc := &corev1.Service{}
	g.Expect(env.k8s.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "mh-headless"}, svc)).To(gomega.Succeed())
	g.Expect(svc.Spec.ClusterIP).To(gomega.Equal(corev1.ClusterIPNone))
	g.Expect(svc.Spec.Selector).To(gomega.Equal(map[string]string{labels.Cluster: "mh", labels.NodeType: string(rayv1.WorkerNode)}))

	groups := replicaGroups(g, key, "tpu")
	expectReplicaGroups(g, groups, 2)
	var broken, intact string
	for name := range groups {
		if broken == "" {
			broken = name
		} else {
			intact = name
		}
	}
	victim := &corev1.Pod{}
	victimUID := groups[broken].hosts["1"]
	for _, p := range rayPods(g, key, "tpu") {
		if p.UID == victimUID {
			*victim = p
		}
	}
	g.Expect(env.k8s.Delete(t.Context(), victim)).To(gomega.Succeed())

	eventually(t, func(g gomega.Gomega) {
		now := replicaGroups(g, key, "tpu")
		g.Expect(now).NotTo(gomega.HaveKey(broken), "the rest of replica %s is deleted too", broken)
		g.Expect(now).To(gomega.HaveKeyWithValue(intact, gomega.Equal(groups[intact])), "replica %s untouched", intact)
		expectReplicaGroups(g, now, 2)
	})
	expectReady(t, key, 4)

	// Naming one host in workersToDelete (with replicas lowered, as the autoscaler does) takes
	// its whole replica away.
	groups = replicaGroups(g, key, "tpu")
	var doomed string
	for name := range groups {
		doomed = name
		break
	}
	var doomedPod string
	for _, p := range rayPods(g, key, "tpu") {
		if p.UID == groups[doomed].hosts["0"] {
			doomedPod = p.Name
		}
	}
	updateRayCluster(t, key, func(rc *rayv1.RayCluster) {
		rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(int32(1))
		rc.Spec.WorkerGroupSpecs[0].ScaleStrategy.WorkersToDelete = []string{doomedPod}
	})
	eventually(t, func(g gomega.Gomega) {
		now := replicaGroups(g, key, "tpu")
		g.Expect(now).To(gomega.HaveLen(1))
		g.Expect(now).NotTo(gomega.HaveKey(doomed), "replica %s removed as a whole", doomed)
		for name, rg := range now {
			g.Expect(rg).To(gomega.Equal(groups[name]), "the other replica is untouched")
		}
	})
	expectReady(t, key, 2)

	// Scaling back up adds a whole replica of two hosts.
	updateRayCluster(t, key, func(rc *rayv1.RayCluster) { rc.Spec.WorkerGroupSpecs[0].Replicas = ptr.To(int32(2)) })
	expectReady(t, key, 4)
	eventually(t, func(g gomega.Gomega) { expectReplicaGroups(g, replicaGroups(g, key, "tpu"), 2) })
}
