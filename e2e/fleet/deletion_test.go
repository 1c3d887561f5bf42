//go:build e2e

package fleet

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// originLabels are the labels that make a member RayService a hub's copy.
var originLabels = []string{labels.OriginNamespace, labels.OriginName, labels.OriginUID, labels.OriginHub}

// Deleting a hub RayService placed on us and eu leaves nothing behind: no member copy, no
// binding, no ControllerRevision, no hub object, and no row in `rayfleet status`.
func TestDeletedRayServiceLeavesNothing(t *testing.T) {
	t.Parallel()
	const ns, name = "delete-all", "svc"
	members := []string{memberUS, memberEU}
	createNamespace(t, ns)
	createPolicy(t, ns, "both", fleetv1alpha1.PlacementPolicySpec{Clusters: ptr.To[int32](2), ClusterSelector: usOrEU})
	rs := createHubRayService(t, ns, name, "both")
	eventually(t, func(g gomega.Gomega) {
		for _, m := range members {
			c := memberRayService(g, m, ns, name)
			g.Expect(c).NotTo(gomega.BeNil(), "copy on %s", m)
			g.Expect(hubReady(c)).To(gomega.BeTrue(), "copy on %s Ready", m)
		}
		g.Expect(binding(g, ns, name).Spec.Clusters).To(gomega.ConsistOf(members))
		g.Expect(revisions(g, ns, name)).NotTo(gomega.BeEmpty(), "ControllerRevisions")
	})
	g := gomega.NewWithT(t)
	g.Expect(statusRows(t, ns, name)).To(gomega.HaveLen(len(members)), "rayfleet status rows before the deletion")

	deletedAt := time.Now()
	if err := fleet.Hub.Client.Delete(t.Context(), rs); err != nil {
		t.Fatalf("deleting RayService %s/%s on the hub: %v", ns, name, err)
	}
	eventually(t, func(g gomega.Gomega) {
		for _, m := range members {
			g.Expect(memberRayService(g, m, ns, name)).To(gomega.BeNil(), "copy on %s", m)
		}
		expectGoneFromHub(g, ns, name)
	})
	t.Logf("deleted to gone from the hub and members: %v", time.Since(deletedAt).Round(time.Millisecond))
	g.Expect(statusRows(t, ns, name)).To(gomega.BeEmpty(), "rayfleet status rows after the deletion")
}

// A hub RayService annotated on-delete: orphan keeps its member copy when deleted: the copy on
// us stays (the same object, still Ready) without its origin labels, so that neither the hub
// nor its orphan sweep touches it, while the hub RayService, its binding and revisions go.
func TestOrphanOnDeleteKeepsMemberCopy(t *testing.T) {
	t.Parallel()
	const ns, name = "delete-orphan", "svc"
	createNamespace(t, ns)
	createPolicy(t, ns, "us-only", fleetv1alpha1.PlacementPolicySpec{ClusterSelector: regionIn(memberUS)})
	rs := newHubRayService(ns, name, "us-only")
	rs.Annotations[labels.OnDelete] = labels.OnDeleteOrphan
	applyHubRayService(t, rs)
	t.Cleanup(func() { deleteMemberRayService(t, memberUS, ns, name) })
	var before *rayv1.RayService
	eventually(t, func(g gomega.Gomega) {
		before = memberRayService(g, memberUS, ns, name)
		g.Expect(before).NotTo(gomega.BeNil(), "copy on %s", memberUS)
		g.Expect(hubReady(before)).To(gomega.BeTrue(), "copy on %s Ready", memberUS)
		g.Expect(before.Labels).To(gomega.HaveKeyWithValue(labels.OriginHub, labels.DefaultHubName))
	})

	if err := fleet.Hub.Client.Delete(t.Context(), rs); err != nil {
		t.Fatalf("deleting RayService %s/%s on the hub: %v", ns, name, err)
	}
	eventually(t, func(g gomega.Gomega) {
		expectGoneFromHub(g, ns, name)
		after := memberRayService(g, memberUS, ns, name)
		g.Expect(after).NotTo(gomega.BeNil(), "orphaned copy on %s", memberUS)
		for _, key := range originLabels {
			g.Expect(after.Labels).NotTo(gomega.HaveKey(key), "orphaned copy's labels")
		}
	})
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		after := memberRayService(g, memberUS, ns, name)
		g.Expect(after).NotTo(gomega.BeNil(), "orphaned copy on %s", memberUS)
		g.Expect(after.UID).To(gomega.Equal(before.UID), "orphaned copy replaced")
		g.Expect(after.DeletionTimestamp).To(gomega.BeNil(), "orphaned copy being deleted")
		g.Expect(hubReady(after)).To(gomega.BeTrue(), "orphaned copy Ready")
	}).WithTimeout(5 * settle).WithPolling(poll).Should(gomega.Succeed())
	gomega.NewWithT(t).Expect(statusRows(t, ns, name)).To(gomega.BeEmpty(), "rayfleet status rows after the deletion")
}

// A RayService on us labelled as a copy of this hub (origin-hub "rayfleet") whose hub
// RayService does not exist is an orphan, and the hub's sweep deletes it; one labelled as a
// copy of another hub is not this hub's business and stays.
func TestOrphanSweepDeletesOnlyThisHubsCopies(t *testing.T) {
	t.Parallel()
	const ns, ours, theirs = "sweep", "ours", "theirs"
	member := fleet.Members[memberUS].Client
	if err := member.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s on %s: %v", ns, memberUS, err)
	}
	theirsUID := createFakeCopy(t, ns, theirs, "another-hub")
	createdAt := time.Now()
	createFakeCopy(t, ns, ours, labels.DefaultHubName)

	eventually(t, func(g gomega.Gomega) {
		g.Expect(memberRayService(g, memberUS, ns, ours)).To(gomega.BeNil(), "this hub's orphan on %s", memberUS)
	})
	t.Logf("figure: orphan created -> swept: %v", time.Since(createdAt).Round(time.Millisecond))
	// The sweep has run on us since the other hub's copy was created.
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		c := memberRayService(g, memberUS, ns, theirs)
		g.Expect(c).NotTo(gomega.BeNil(), "another hub's copy on %s", memberUS)
		g.Expect(c.UID).To(gomega.Equal(theirsUID), "another hub's copy replaced")
		g.Expect(c.DeletionTimestamp).To(gomega.BeNil(), "another hub's copy being deleted")
	}).WithTimeout(5 * settle).WithPolling(poll).Should(gomega.Succeed())
	writes := hubWrites(t, memberUS, ns, theirs, time.Time{}, time.Now())
	gomega.NewWithT(t).Expect(writes.attempted).To(gomega.BeZero(), "the hub's writes of another hub's copy: %s", writes)
}

// createFakeCopy creates on us a RayService labelled as hub's copy of a hub RayService ns/name
// that does not exist, deleted at the end of the test; it returns its UID.
func createFakeCopy(t *testing.T, ns, name, hub string) types.UID {
	t.Helper()
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).Obj()
	rs.UID, rs.Generation, rs.ResourceVersion = "", 0, ""
	rs.Labels = map[string]string{
		labels.OriginNamespace: ns, labels.OriginName: name, labels.OriginUID: string(uuid.NewUUID()), labels.OriginHub: hub,
	}
	if err := fleet.Members[memberUS].Client.Create(t.Context(), rs); err != nil {
		t.Fatalf("creating RayService %s/%s on %s: %v", ns, name, memberUS, err)
	}
	t.Cleanup(func() { deleteMemberRayService(t, memberUS, ns, name) })
	return rs.UID
}

// deleteMemberRayService deletes a RayService the test left on member, if it is still there.
func deleteMemberRayService(t *testing.T, member, ns, name string) {
	rs := &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := fleet.Members[member].Client.Delete(context.Background(), rs); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting RayService %s/%s on %s: %v", ns, name, member, err)
	}
}

// expectGoneFromHub checks that the hub holds nothing of ns/name any more: neither the
// RayService, nor its binding, nor a ControllerRevision.
func expectGoneFromHub(g gomega.Gomega, ns, name string) {
	key := client.ObjectKey{Namespace: ns, Name: name}
	var hub rayv1.RayService
	err := fleet.Hub.Client.Get(context.Background(), key, &hub)
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "hub RayService still there (finalizers %v): %v", hub.Finalizers, err)
	var b fleetv1alpha1.RayServiceBinding
	err = fleet.Hub.Client.Get(context.Background(), key, &b)
	g.Expect(apierrors.IsNotFound(err)).To(gomega.BeTrue(), "binding still there: %v", err)
	g.Expect(revisions(g, ns, name)).To(gomega.BeEmpty(), "ControllerRevisions")
}

// revisions are the names of the hub's ControllerRevisions of the RayService ns/name.
func revisions(g gomega.Gomega, ns, name string) []string {
	var list appsv1.ControllerRevisionList
	g.Expect(fleet.Hub.Client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{labels.OriginName: name})).To(gomega.Succeed())
	names := make([]string, 0, len(list.Items))
	for _, cr := range list.Items {
		names = append(names, cr.Name)
	}
	return names
}

// statusRows runs `rayfleet status` against the hub and returns the rows of its RayService
// table that are about ns/name.
func statusRows(t *testing.T, ns, name string) []string {
	t.Helper()
	cli := filepath.Join(localfleet.DefaultRayFleetBin(), "rayfleet")
	cmd := exec.CommandContext(t.Context(), cli, "status", "--hub-kubeconfig", fleet.Hub.Kubeconfig, "-n", ns)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("rayfleet status -n %s: %v\n%s", ns, err, stderr.String())
	}
	var rows []string
	for line := range strings.Lines(string(out)) {
		if fields := strings.Fields(line); len(fields) > 0 && fields[0] == ns+"/"+name {
			rows = append(rows, strings.TrimSpace(line))
		}
	}
	return rows
}
