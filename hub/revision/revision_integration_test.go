package revision

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

const testNamespace = "rev"

// revisionEnv is one API server with the test namespace and hub RayServices in it.
type revisionEnv struct {
	c client.Client
}

func startRevisionEnv(t *testing.T) *revisionEnv {
	t.Helper()
	env := envtest.Start(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNamespace}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return &revisionEnv{c: env.Client}
}

// rayService creates a hub RayService; the API server gives it its UID.
func (e *revisionEnv) rayService(t *testing.T, name string) *rayv1.RayService {
	t.Helper()
	rs := raybuilder.MakeRayService(name, testNamespace).Obj()
	rs.UID, rs.Generation = "", 0
	if err := e.c.Create(context.Background(), rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

func (e *revisionEnv) history(t *testing.T, hub *rayv1.RayService) History {
	t.Helper()
	revs, err := List(context.Background(), e.c, hub)
	if err != nil {
		t.Fatal(err)
	}
	return revs
}

// ensure is Ensure, failing the test on an error.
func (e *revisionEnv) ensure(t *testing.T, hub *rayv1.RayService, c *Content, h History) (*appsv1.ControllerRevision, bool) {
	t.Helper()
	cr, created, err := Ensure(context.Background(), e.c, hub, c, h)
	if err != nil {
		t.Fatal(err)
	}
	return cr, created
}

// Revisions of one RayService through its life: created on each new content, reused on a
// content seen before (however its patches are written), read back when a stale history misses
// one, kept apart from other RayServices' and objects that are not the hub's.
func TestEnsureAndList(t *testing.T) {
	e := startRevisionEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	hub := e.rayService(t, "svc")
	g.Expect(e.history(t, hub)).To(BeEmpty())

	c1 := content()
	c2 := content()
	c2.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:2.99.0"
	c3 := &Content{Spec: c2.Spec, Overrides: content(override("eu", `{"rayClusterConfig":{"rayVersion":"2.52.0"},"serveConfigV2":"x"}`)).Overrides}

	rev1, created := e.ensure(t, hub, c1, e.history(t, hub))
	g.Expect(created).To(BeTrue())
	g.Expect(rev1.Revision).To(BeEquivalentTo(1))
	var stored appsv1.ControllerRevision
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(rev1), &stored)).To(Succeed())
	g.Expect(stored.Name).To(Equal(Name("svc", mustHash(t, c1))))
	g.Expect(metav1.IsControlledBy(&stored, hub)).To(BeTrue(), "controlled by the hub RayService")
	g.Expect(stored.Labels).To(Equal(map[string]string{labels.OriginName: "svc", labels.OriginUID: string(hub.UID)}))
	decoded, err := Decode(&stored)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mustHash(t, decoded)).To(Equal(mustHash(t, c1)), "the stored content hashes as the one given")

	again, created := e.ensure(t, hub, c1, e.history(t, hub))
	g.Expect(created).To(BeFalse())
	g.Expect(again.UID).To(Equal(rev1.UID))

	stale := e.history(t, hub)
	rev2, created := e.ensure(t, hub, c2, e.history(t, hub))
	g.Expect(created).To(BeTrue())
	g.Expect(rev2.Revision).To(BeEquivalentTo(2))
	rev3, created := e.ensure(t, hub, c3, e.history(t, hub))
	g.Expect(created).To(BeTrue())
	g.Expect(rev3.Revision).To(BeEquivalentTo(3))

	// A history read before rev2 existed: the create finds the name taken and reads it back.
	reread, created := e.ensure(t, hub, c2, stale)
	g.Expect(created).To(BeFalse())
	g.Expect(reread.UID).To(Equal(rev2.UID))

	// The same overrides written differently are the same revision.
	c3b := &Content{Spec: c2.Spec, Overrides: content(override("eu", "{\"serveConfigV2\": \"x\",\n \"rayClusterConfig\": {\"rayVersion\": \"2.52.0\"}}")).Overrides}
	same, created := e.ensure(t, hub, c3b, e.history(t, hub))
	g.Expect(created).To(BeFalse())
	g.Expect(same.UID).To(Equal(rev3.UID))

	// Going back to the first spec reuses revision 1 as it is.
	back, created := e.ensure(t, hub, c1, e.history(t, hub))
	g.Expect(created).To(BeFalse())
	g.Expect(back.UID).To(Equal(rev1.UID))
	g.Expect(back.Revision).To(BeEquivalentTo(1))

	// Another RayService's revisions, and objects labelled like this one's but not controlled
	// by it, are not in its history.
	other := e.rayService(t, "other")
	_, created = e.ensure(t, other, c1, e.history(t, other))
	g.Expect(created).To(BeTrue())
	foreign := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "svc-foreign", Labels: map[string]string{labels.OriginName: "svc"}},
		Data:       runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 9,
	}
	g.Expect(controllerutil.SetControllerReference(other, foreign, e.c.Scheme())).To(Succeed())
	g.Expect(e.c.Create(ctx, foreign)).To(Succeed())
	unowned := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "svc-unowned", Labels: map[string]string{labels.OriginName: "svc"}},
		Data:       runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 10,
	}
	g.Expect(e.c.Create(ctx, unowned)).To(Succeed())
	h := e.history(t, hub)
	g.Expect(names(h)).To(Equal([]string{rev1.Name, rev2.Name, rev3.Name}), "oldest first, only the hub's")
	g.Expect(e.history(t, other)).To(HaveLen(1))
	g.Expect(h.NextNumber()).To(BeEquivalentTo(4))
}

// A name held by an object the hub RayService does not control (left by a deleted RayService of
// the same name, until the garbage collector removes it) is an error, not adopted.
func TestEnsureRefusesAnotherObject(t *testing.T) {
	e := startRevisionEnv(t)
	g := NewWithT(t)
	hub := e.rayService(t, "svc")
	c := content()
	squatter := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: testNamespace, Name: Name("svc", mustHash(t, c)),
			Labels: map[string]string{labels.OriginName: "svc", labels.OriginUID: "gone"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: rayv1.GroupVersion.String(), Kind: "RayService", Name: "svc", UID: types.UID("gone"), Controller: ptr.To(true),
			}},
		},
		Data: runtime.RawExtension{Raw: []byte(`{}`)}, Revision: 1,
	}
	g.Expect(e.c.Create(context.Background(), squatter)).To(Succeed())
	g.Expect(e.history(t, hub)).To(BeEmpty())
	_, _, err := Ensure(context.Background(), e.c, hub, c, nil)
	g.Expect(err).To(MatchError(ContainSubstring("is not controlled by RayService svc")))

	// The hub's own revision under the name but recording another content (two contents whose
	// hashes share the name's 10 characters): refused rather than mistaken for this one, whether
	// the history has it or the create finds it.
	hub2 := e.rayService(t, "svc2")
	collision := content()
	collision.Spec.ServeConfigV2 = "applications: []\n"
	forged, err := New(hub2, collision, 1, e.c.Scheme())
	g.Expect(err).NotTo(HaveOccurred())
	forged.Name = Name("svc2", mustHash(t, c))
	g.Expect(e.c.Create(context.Background(), forged)).To(Succeed())
	for _, h := range []History{e.history(t, hub2), nil} {
		_, _, err = Ensure(context.Background(), e.c, hub2, c, h)
		g.Expect(err).To(MatchError(ContainSubstring("records another content whose hash starts alike")), "history %v", names(h))
	}
}

// Pruning deletes the oldest unkept revisions; deleting tolerates revisions already gone and
// never deletes a newer object that took a pruned revision's name.
func TestPruneAndDelete(t *testing.T) {
	e := startRevisionEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	hub := e.rayService(t, "svc")
	var contents []*Content
	for _, image := range []string{"a", "b", "c", "d"} {
		c := content()
		c.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image = "rayproject/ray:" + image
		contents = append(contents, c)
		e.ensure(t, hub, c, e.history(t, hub))
	}
	h := e.history(t, hub)
	g.Expect(h).To(HaveLen(4))

	prune := Prune(h, map[string]bool{h[0].Name: true, h[3].Name: true}, 2)
	g.Expect(prune).To(Equal([]string{h[1].Name, h[2].Name}))
	g.Expect(Delete(ctx, e.c, h, prune)).To(Succeed())
	g.Expect(names(e.history(t, hub))).To(Equal([]string{h[0].Name, h[3].Name}))

	// Deleted already: not an error.
	g.Expect(Delete(ctx, e.c, h, prune)).To(Succeed())

	// Revision 2's content comes back as a new object under the old name: a delete from the
	// old history must leave it.
	back, created := e.ensure(t, hub, contents[1], e.history(t, hub))
	g.Expect(created).To(BeTrue())
	g.Expect(back.Name).To(Equal(h[1].Name))
	g.Expect(back.UID).NotTo(Equal(h[1].UID))
	g.Expect(back.Revision).To(BeEquivalentTo(5))
	g.Expect(Delete(ctx, e.c, h, []string{h[1].Name})).To(Succeed())
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(back), &appsv1.ControllerRevision{})).To(Succeed(), "the newer object stays")

	err := Delete(ctx, e.c, h, []string{"svc-notours"})
	g.Expect(err).To(MatchError(ContainSubstring("deleting revision svc-notours: not in the history read")))
}

// MaxContentBytes fits in the API server's etcd with the revision's metadata; one byte more is
// refused before the API server is asked; and the limit is real: etcd refuses a revision of
// 1.5 MiB.
func TestContentSizeLimit(t *testing.T) {
	e := startRevisionEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	hub := e.rayService(t, strings.Repeat("s", 47))

	largest, created := e.ensure(t, hub, contentOfSize(t, MaxContentBytes), nil)
	g.Expect(created).To(BeTrue())
	var stored appsv1.ControllerRevision
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(largest), &stored)).To(Succeed())
	g.Expect(stored.Data.Raw).To(HaveLen(MaxContentBytes))

	_, _, err := Ensure(ctx, e.c, hub, contentOfSize(t, MaxContentBytes+1), e.history(t, hub))
	var tooLarge *TooLargeError
	g.Expect(errors.As(err, &tooLarge)).To(BeTrue(), "error %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("a revision holds at most 1507328")))
	g.Expect(e.history(t, hub)).To(HaveLen(1))

	// Data of etcd's request limit, a JSON object of 1.5 MiB: too large once stored.
	huge := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: "huge"},
		Data:       runtime.RawExtension{Raw: []byte(`{"a":"` + strings.Repeat("a", etcdMaxRequestBytes-8) + `"}`)},
		Revision:   1,
	}
	err = e.c.Create(ctx, huge)
	g.Expect(err).To(HaveOccurred(), "etcd stores an object of its whole request limit")
	g.Expect(err.Error()).To(ContainSubstring("request is too large"), "etcd's refusal")
}
