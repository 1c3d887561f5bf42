package simmembers

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// recordingAware records the clusters a provider engages.
type recordingAware struct {
	mu      sync.Mutex
	engaged map[multicluster.ClusterName]cluster.Cluster
}

func (a *recordingAware) Engage(_ context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.engaged[name] = cl
	return nil
}

func (a *recordingAware) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.engaged)
}

// simEnv is one backing API server with two simulated members on it.
type simEnv struct {
	env         *envtest.Env
	alpha, beta cluster.Cluster
}

// startSim starts a backing server and members alpha and beta whose caches hold namespaces
// (default: bench), and creates namespace bench on both.
func startSim(t *testing.T, namespaces ...string) *simEnv {
	t.Helper()
	if len(namespaces) == 0 {
		namespaces = []string{"bench"}
	}
	g := NewWithT(t)
	env := envtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	// Members are engaged concurrently: the option runs on several goroutines.
	var qps atomic.Int32
	p, err := New(Options{
		Members: []string{"alpha", "beta"}, Namespaces: namespaces, Config: env.Config,
		ClusterOptions: []cluster.Option{func(o *cluster.Options) { o.Scheme = env.Scheme }},
		RESTOptions:    []func(*rest.Config) error{func(c *rest.Config) error { c.QPS = 77; qps.Store(77); return nil }},
	})
	g.Expect(err).NotTo(HaveOccurred())
	aware := &recordingAware{engaged: map[multicluster.ClusterName]cluster.Cluster{}}
	go func() { _ = p.Start(ctx, aware) }()
	g.Eventually(aware.count).WithTimeout(time.Minute).Should(Equal(2))
	alpha, err := p.Get(ctx, "alpha")
	g.Expect(err).NotTo(HaveOccurred())
	beta, err := p.Get(ctx, "beta")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = p.Get(ctx, "gamma")
	g.Expect(err).To(MatchError(multicluster.ErrClusterNotFound))
	g.Expect(qps.Load()).To(BeEquivalentTo(77))
	g.Expect(alpha.GetConfig().QPS).To(BeEquivalentTo(77), "the hub's REST options reach the member's config")
	g.Expect(alpha.GetHTTPClient()).NotTo(BeIdenticalTo(beta.GetHTTPClient()), "each member has its own HTTP client")
	for _, cl := range []cluster.Cluster{alpha, beta} {
		g.Expect(cl.GetClient().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}})).To(Succeed())
	}
	return &simEnv{env: env, alpha: alpha, beta: beta}
}

// rayService is a valid RayService named name in the member namespace bench, labelled with
// its member.
func rayService(name, member string) *rayv1.RayService {
	rs := raybuilder.MakeRayService(name, "bench").Obj()
	rs.UID, rs.Generation = "", 0
	rs.Labels = map[string]string{"member": member}
	return rs
}

func TestNamespacesAreMapped(t *testing.T) {
	s := startSim(t)
	ctx := context.Background()
	g := NewWithT(t)
	var backing corev1.Namespace
	g.Expect(s.env.Client.Get(ctx, client.ObjectKey{Name: "alpha-bench"}, &backing)).To(Succeed())
	g.Expect(backing.Labels).To(HaveKeyWithValue(MemberLabel, "alpha"))
	g.Expect(backing.Labels).To(HaveKeyWithValue(corev1.LabelMetadataName, "alpha-bench"))

	for _, r := range []client.Reader{s.alpha.GetClient(), s.alpha.GetAPIReader(), s.alpha.GetCache()} {
		g.Eventually(func(g Gomega) {
			var ns corev1.Namespace
			g.Expect(r.Get(ctx, client.ObjectKey{Name: "bench"}, &ns)).To(Succeed())
			g.Expect(ns.Name).To(Equal("bench"))
			g.Expect(ns.Labels).NotTo(HaveKey(MemberLabel))
			g.Expect(ns.Labels).To(HaveKeyWithValue(corev1.LabelMetadataName, "bench"))
			var list corev1.NamespaceList
			g.Expect(r.List(ctx, &list)).To(Succeed())
			names := []string{}
			for _, n := range list.Items {
				names = append(names, n.Name)
			}
			g.Expect(names).To(ConsistOf("bench"), "alpha sees its own namespace only")
		}).Should(Succeed())
	}

	t.Run("server-side apply and patches keep the member label", func(t *testing.T) {
		g := NewWithT(t)
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName("extra")
		u.SetLabels(map[string]string{"team": "a"})
		g.Expect(s.alpha.GetClient().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("test"))).To(Succeed())
		g.Expect(u.GetName()).To(Equal("extra"))
		g.Expect(u.GetUID()).NotTo(BeEmpty())
		g.Expect(u.GetLabels()).NotTo(HaveKey(MemberLabel))

		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "extra"}}
		drop := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":null}}`))
		g.Expect(s.alpha.GetClient().Patch(ctx, ns, drop)).To(Succeed())
		g.Expect(ns.Name).To(Equal("extra"))
		var backing corev1.Namespace
		g.Expect(s.env.Client.Get(ctx, client.ObjectKey{Name: "alpha-extra"}, &backing)).To(Succeed())
		g.Expect(backing.Labels).To(HaveKeyWithValue(MemberLabel, "alpha"))
		g.Expect(backing.Labels).To(HaveKeyWithValue("team", "a"), "a merge patch only sets what it names")
	})

	t.Run("errors name the member's objects", func(t *testing.T) {
		g := NewWithT(t)
		err := s.alpha.GetAPIReader().Get(ctx, client.ObjectKey{Name: "missing"}, &corev1.Namespace{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).NotTo(ContainSubstring("alpha-"))
		g.Expect(err.Error()).To(ContainSubstring(`"missing"`))
	})
}

func TestRayServicesAreMapped(t *testing.T) {
	s := startSim(t)
	ctx := context.Background()
	g := NewWithT(t)
	ac, bc := s.alpha.GetClient(), s.beta.GetClient()

	// Both members hold a copy named rs; each sees only its own.
	mine := rayService("rs", "alpha")
	g.Expect(ac.Create(ctx, mine)).To(Succeed())
	g.Expect(mine.Namespace).To(Equal("bench"))
	g.Expect(mine.UID).NotTo(BeEmpty())
	g.Expect(bc.Create(ctx, rayService("rs", "beta"))).To(Succeed())
	var backing rayv1.RayService
	g.Expect(s.env.Client.Get(ctx, client.ObjectKey{Namespace: "alpha-bench", Name: "rs"}, &backing)).To(Succeed())
	g.Expect(backing.Labels).To(HaveKeyWithValue("member", "alpha"))
	g.Expect(backing.UID).To(Equal(mine.UID))

	for _, r := range []client.Reader{ac, s.alpha.GetAPIReader(), s.alpha.GetCache()} {
		g.Eventually(func(g Gomega) {
			var got rayv1.RayService
			g.Expect(r.Get(ctx, client.ObjectKey{Namespace: "bench", Name: "rs"}, &got)).To(Succeed())
			g.Expect(got.Namespace).To(Equal("bench"))
			g.Expect(got.Labels).To(HaveKeyWithValue("member", "alpha"))
			for _, opts := range [][]client.ListOption{nil, {client.InNamespace("bench")}, {client.MatchingLabels{"member": "beta"}}} {
				var list rayv1.RayServiceList
				g.Expect(r.List(ctx, &list, opts...)).To(Succeed())
				for _, item := range list.Items {
					g.Expect(item.Namespace).To(Equal("bench"))
					g.Expect(item.Labels).To(HaveKeyWithValue("member", "alpha"), "alpha listed beta's copy")
				}
			}
		}).Should(Succeed())
	}

	testWrites(t, s, mine)
	testStatusAndDeletes(t, s, mine)
}

// testWrites updates, patches and applies alpha's copy mine, checking the backing object.
func testWrites(t *testing.T, s *simEnv, mine *rayv1.RayService) {
	ctx := context.Background()
	ac := s.alpha.GetClient()
	t.Run("update", func(t *testing.T) {
		g := NewWithT(t)
		var got rayv1.RayService
		g.Expect(s.alpha.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(mine), &got)).To(Succeed())
		got.Labels["updated"] = "yes"
		g.Expect(ac.Update(ctx, &got)).To(Succeed())
		g.Expect(got.Namespace).To(Equal("bench"))
		expectBacking(t, s, "alpha", func(g Gomega, rs *rayv1.RayService) { g.Expect(rs.Labels).To(HaveKeyWithValue("updated", "yes")) })
	})

	t.Run("merge and JSON patches", func(t *testing.T) {
		g := NewWithT(t)
		var got rayv1.RayService
		g.Expect(s.alpha.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(mine), &got)).To(Succeed())
		orig := got.DeepCopy()
		metav1.SetMetaDataAnnotation(&got.ObjectMeta, "merge", "yes")
		g.Expect(ac.Patch(ctx, &got, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))).To(Succeed())
		g.Expect(got.Namespace).To(Equal("bench"))
		jp := client.RawPatch(types.JSONPatchType, []byte(`[{"op":"add","path":"/metadata/annotations/json","value":"yes"}]`))
		g.Expect(ac.Patch(ctx, &got, jp)).To(Succeed())
		expectBacking(t, s, "alpha", func(g Gomega, rs *rayv1.RayService) {
			g.Expect(rs.Annotations).To(HaveKeyWithValue("merge", "yes"))
			g.Expect(rs.Annotations).To(HaveKeyWithValue("json", "yes"))
		})
	})

	t.Run("server-side apply as the hub writes its copies", func(t *testing.T) {
		g := NewWithT(t)
		desired := rayService("rs", "alpha")
		desired.TypeMeta = metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayService"}
		desired.Labels["applied"] = "yes"
		data, err := json.Marshal(desired)
		g.Expect(err).NotTo(HaveOccurred())
		u := &unstructured.Unstructured{}
		g.Expect(json.Unmarshal(data, &u.Object)).To(Succeed())
		delete(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		g.Expect(ac.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("hub"), client.ForceOwnership)).To(Succeed())
		var got rayv1.RayService
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &got)).To(Succeed())
		g.Expect(got.Namespace).To(Equal("bench"), "the stored object comes back in the member's names")
		g.Expect(got.UID).To(Equal(mine.UID))
		expectBacking(t, s, "alpha", func(g Gomega, rs *rayv1.RayService) { g.Expect(rs.Labels).To(HaveKeyWithValue("applied", "yes")) })
	})

	t.Run("apply patch", func(t *testing.T) {
		g := NewWithT(t)
		desired := rayService("rs", "alpha")
		desired.TypeMeta = metav1.TypeMeta{APIVersion: rayv1.GroupVersion.String(), Kind: "RayService"}
		desired.ManagedFields = nil
		desired.Labels["apply-patch"] = "yes"
		//nolint:staticcheck // the deprecated apply patch is still a way in, and mapped
		g.Expect(ac.Patch(ctx, desired, client.Apply, client.FieldOwner("other"), client.ForceOwnership)).To(Succeed())
		g.Expect(desired.Namespace).To(Equal("bench"))
		expectBacking(t, s, "alpha", func(g Gomega, rs *rayv1.RayService) { g.Expect(rs.Labels).To(HaveKeyWithValue("apply-patch", "yes")) })
	})

}

// testStatusAndDeletes writes alpha's copy's status and deletes alpha's copies, beta's staying.
func testStatusAndDeletes(t *testing.T, s *simEnv, mine *rayv1.RayService) {
	ctx := context.Background()
	ac := s.alpha.GetClient()
	t.Run("status", func(t *testing.T) {
		g := NewWithT(t)
		var got rayv1.RayService
		g.Expect(s.alpha.GetAPIReader().Get(ctx, client.ObjectKeyFromObject(mine), &got)).To(Succeed())
		got.Status.NumServeEndpoints = 3
		g.Expect(ac.Status().Update(ctx, &got)).To(Succeed())
		g.Expect(got.Namespace).To(Equal("bench"))
		sp := client.RawPatch(types.MergePatchType, []byte(`{"status":{"serviceStatus":"Running"}}`))
		g.Expect(ac.Status().Patch(ctx, &got, sp)).To(Succeed())
		expectBacking(t, s, "alpha", func(g Gomega, rs *rayv1.RayService) {
			g.Expect(rs.Status.NumServeEndpoints).To(BeEquivalentTo(3))
			g.Expect(rs.Status.ServiceStatus).To(Equal(rayv1.Running))
		})
	})

	t.Run("delete with a UID precondition", func(t *testing.T) {
		g := NewWithT(t)
		other := rayService("gone", "alpha")
		g.Expect(ac.Create(ctx, other)).To(Succeed())
		wrong := types.UID("not-its-uid")
		g.Expect(apierrors.IsConflict(ac.Delete(ctx, other, client.Preconditions{UID: &wrong}))).To(BeTrue())
		g.Expect(ac.Delete(ctx, other, client.Preconditions{UID: &other.UID})).To(Succeed())
		g.Expect(other.Namespace).To(Equal("bench"))
		err := s.env.Client.Get(ctx, client.ObjectKey{Namespace: "alpha-bench", Name: "gone"}, &rayv1.RayService{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
	})

	t.Run("delete all of, in a namespace and in all", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(ac.Create(ctx, rayService("a1", "alpha"))).To(Succeed())
		g.Expect(ac.DeleteAllOf(ctx, &rayv1.RayService{}, client.InNamespace("bench"), client.MatchingLabels{"member": "alpha"})).To(Succeed())
		g.Expect(ac.Create(ctx, rayService("a2", "alpha"))).To(Succeed())
		g.Expect(ac.DeleteAllOf(ctx, &rayv1.RayService{})).To(Succeed())
		var left rayv1.RayServiceList
		g.Expect(s.env.Client.List(ctx, &left)).To(Succeed())
		for _, rs := range left.Items {
			g.Expect(rs.Namespace).To(Equal("beta-bench"), "alpha's DeleteAllOf left %s/%s", rs.Namespace, rs.Name)
		}
		g.Expect(left.Items).To(HaveLen(1), "beta's copy is untouched")
	})
}

// expectBacking checks member's copy rs as the backing server holds it.
func expectBacking(t *testing.T, s *simEnv, member string, check func(Gomega, *rayv1.RayService)) {
	t.Helper()
	g := NewWithT(t)
	var rs rayv1.RayService
	g.Expect(s.env.Client.Get(context.Background(), client.ObjectKey{Namespace: member + "-bench", Name: "rs"}, &rs)).To(Succeed())
	check(g, &rs)
}

// TestInformerEvents checks what the hub's watches receive: a member's own objects, in its
// names, never another member's.
func TestInformerEvents(t *testing.T) {
	s := startSim(t)
	ctx := context.Background()
	g := NewWithT(t)
	var mu sync.Mutex
	var seen []string
	record := func(obj any) {
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		rs := obj.(*rayv1.RayService)
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, rs.Namespace+"/"+rs.Name+"/"+rs.Labels["member"])
	}
	inf, err := s.alpha.GetCache().GetInformer(ctx, &rayv1.RayService{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = inf.AddEventHandlerWithResyncPeriod(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
		DeleteFunc: record,
	}, time.Hour)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.alpha.GetCache().WaitForCacheSync(ctx)).To(BeTrue())

	// beta's copy first: by the time alpha's arrives, beta's would have too.
	g.Expect(s.beta.GetClient().Create(ctx, rayService("rs", "beta"))).To(Succeed())
	rs := rayService("rs", "alpha")
	g.Expect(s.alpha.GetClient().Create(ctx, rs)).To(Succeed())
	g.Expect(s.alpha.GetClient().Delete(ctx, rs)).To(Succeed())
	g.Eventually(func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}).Should(ContainElement("bench/rs/alpha"))
	g.Eventually(func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}).Should(BeNumerically(">=", 2), "the delete arrives")
	mu.Lock()
	defer mu.Unlock()
	for _, s := range seen {
		g.Expect(s).To(Equal("bench/rs/alpha"), "alpha's informer delivered %q", s)
		g.Expect(strings.Contains(s, "beta")).To(BeFalse())
	}
}

// TestIndexField checks that indexes see the member's names: an index on the namespace, then a
// cached list by it.
func TestIndexField(t *testing.T) {
	env := envtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g := NewWithT(t)
	p, err := New(Options{
		Members: []string{"alpha"}, Namespaces: []string{"bench"}, Config: env.Config,
		ClusterOptions: []cluster.Option{func(o *cluster.Options) { o.Scheme = env.Scheme }},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.IndexField(ctx, &rayv1.RayService{}, "ns", func(o client.Object) []string {
		return []string{o.GetNamespace()}
	})).To(Succeed())
	aware := &recordingAware{engaged: map[multicluster.ClusterName]cluster.Cluster{}}
	go func() { _ = p.Start(ctx, aware) }()
	g.Eventually(aware.count).WithTimeout(time.Minute).Should(Equal(1))
	alpha, err := p.Get(ctx, "alpha")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(alpha.GetClient().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}})).To(Succeed())
	g.Expect(alpha.GetClient().Create(ctx, rayService("rs", "alpha"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		var list rayv1.RayServiceList
		g.Expect(alpha.GetCache().List(ctx, &list, client.MatchingFields{"ns": "bench"})).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
	}).Should(Succeed())
}

// TestSeveralNamespaces checks the caches of members with more than one namespace, and that a
// cached read of a namespace no member cache holds is an error, not a NotFound.
func TestSeveralNamespaces(t *testing.T) {
	s := startSim(t, "bench", "other")
	ctx := context.Background()
	g := NewWithT(t)
	ac := s.alpha.GetClient()
	g.Expect(ac.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})).To(Succeed())
	g.Expect(s.beta.GetClient().Create(ctx, rayService("rs", "beta"))).To(Succeed())
	g.Expect(ac.Create(ctx, rayService("rs", "alpha"))).To(Succeed())
	inOther := rayService("rs", "alpha")
	inOther.Namespace = "other"
	g.Expect(ac.Create(ctx, inOther)).To(Succeed())
	g.Expect(inOther.Namespace).To(Equal("other"))
	g.Eventually(func(g Gomega) {
		var list rayv1.RayServiceList
		g.Expect(s.alpha.GetCache().List(ctx, &list)).To(Succeed())
		got := []string{}
		for _, rs := range list.Items {
			got = append(got, rs.Namespace+"/"+rs.Labels["member"])
		}
		g.Expect(got).To(ConsistOf("bench/alpha", "other/alpha"))
		var one rayv1.RayService
		g.Expect(ac.Get(ctx, client.ObjectKey{Namespace: "other", Name: "rs"}, &one)).To(Succeed())
		g.Expect(one.Namespace).To(Equal("other"))
		var nss corev1.NamespaceList
		g.Expect(s.alpha.GetCache().List(ctx, &nss)).To(Succeed())
		g.Expect(nss.Items).To(HaveLen(2))
	}).Should(Succeed())
	err := ac.Get(ctx, client.ObjectKey{Namespace: "elsewhere", Name: "rs"}, &rayv1.RayService{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(apierrors.IsNotFound(err)).To(BeFalse(), "a namespace the cache does not hold is not a NotFound")
	g.Expect(s.alpha.GetAPIReader().Get(ctx, client.ObjectKey{Namespace: "other", Name: "rs"}, &rayv1.RayService{})).To(Succeed())
}
