package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// memberWrites records every write the reconciler makes on a member, as "cluster: verb name".
type memberWrites struct {
	mu  sync.Mutex
	log []string
}

// recording returns the reconciler's Members: clients of envs by name, acting as users[name]
// where set, whose writes are recorded in w.
func (w *memberWrites) recording(t *testing.T, envs map[string]*envtest.Env, users map[string]rest.ImpersonationConfig) staticMembers {
	t.Helper()
	out := staticMembers{}
	for name, env := range envs {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = users[name]
		c, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = interceptor.NewClient(c, w.funcs(name))
	}
	return out
}

func (w *memberWrites) add(cluster, verb, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = append(w.log, fmt.Sprintf("%s: %s %s", cluster, verb, name))
}

// naming returns the recorded writes of objects named name.
func (w *memberWrites) naming(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(w.log), func(s string) bool { return !strings.HasSuffix(s, " "+name) })
}

// verbs returns the recorded writes of verb ("delete", "apply", ...).
func (w *memberWrites) verbs(verb string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(w.log), func(s string) bool { return !strings.Contains(s, ": "+verb+" ") })
}

// funcs record the writes on cluster. An applied object whose name cannot be read is recorded
// under every name, so that it cannot hide.
func (w *memberWrites) funcs(cluster string) interceptor.Funcs {
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.add(cluster, "create", obj.GetName())
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.add(cluster, "update", obj.GetName())
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.add(cluster, "patch", obj.GetName())
			return c.Patch(ctx, obj, p, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.add(cluster, "delete", obj.GetName())
			return c.Delete(ctx, obj, opts...)
		},
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			name := "*"
			if named, ok := obj.(interface{ GetName() string }); ok {
				name = named.GetName()
			}
			w.add(cluster, "apply", name)
			return c.Apply(ctx, obj, opts...)
		},
	}
}

// brokenOverride is an override for the us member whose patch misspells serveConfigV2: the
// CRD's schema cannot see inside a patch, so only policy.Check catches it.
func brokenOverride() fleetv1alpha1.ClusterOverride {
	return fleetv1alpha1.ClusterOverride{
		ClusterSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}},
		Patch:           apiextensionsv1.JSON{Raw: []byte(`{"servConfigV2":"applications: []"}`)},
	}
}

// expectPolicyRejected waits for the hub RayService name and its binding to say that policy
// is rejected, with an event, and then checks for a few resyncs that the binding keeps
// clusters and that the reconciler has written nothing named name on any member since its
// writesBefore'th such write.
func (h *fleetHarness) expectPolicyRejected(t *testing.T, name, policy string, clusters []string, writesBefore int) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		ready := meta.FindStatusCondition(h.hubRayService(g, name).Status.Conditions, string(rayv1.RayServiceReady))
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(fleetv1alpha1.ReasonPolicyInvalid))
		g.Expect(ready.Message).To(HavePrefix(fmt.Sprintf("PlacementPolicy %s/%s: overrides: override 0:", ns, policy)))
		g.Expect(ready.Message).To(ContainSubstring(`unknown field "servConfigV2"`))
		b := h.binding(g, name)
		placed := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPlaced)
		g.Expect(placed).NotTo(BeNil())
		g.Expect(placed.Reason).To(Equal(fleetv1alpha1.ReasonPolicyInvalid))
		propagated := meta.FindStatusCondition(b.Status.Conditions, fleetv1alpha1.ConditionPropagated)
		g.Expect(propagated).NotTo(BeNil())
		g.Expect(propagated.Reason).To(Equal(fleetv1alpha1.ReasonPolicyInvalid))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		var evs eventsv1.EventList
		g.Expect(h.hub.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
		g.Expect(slices.ContainsFunc(evs.Items, func(ev eventsv1.Event) bool {
			return ev.Regarding.Name == name && ev.Type == corev1.EventTypeWarning &&
				ev.Reason == fleetv1alpha1.ReasonPolicyInvalid && strings.Contains(ev.Note, "servConfigV2")
		})).To(BeTrue(), "a Warning PolicyInvalid event about %s", name)
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(h.binding(g, name).Spec.Clusters).To(Equal(clusters))
		g.Expect(h.writes.naming(name)[writesBefore:]).To(BeEmpty(), "member writes after the policy broke")
	}, settle, interval).Should(Succeed())
}

// TestFleetRejectsBrokenPolicy checks that a PlacementPolicy whose override breaks the RayService
// schema stops its RayServices before placement, once, for every member: Ready and Placed say
// which policy and why, and nothing is placed, applied or deleted on any member.
func TestFleetRejectsBrokenPolicy(t *testing.T) {
	h := startFleet(t)
	ctx := context.Background()

	t.Run("a new RayService is not placed", func(t *testing.T) {
		g := NewWithT(t)
		h.createPolicy(g, "typo", fleetv1alpha1.PlacementPolicySpec{
			Overrides: []fleetv1alpha1.ClusterOverride{brokenOverride()},
		})
		h.createRayService(g, "fresh", "typo")
		h.expectPolicyRejected(t, "fresh", "typo", nil, 0)
		g.Expect(h.memberCopy(g, "eu", "fresh")).To(BeNil())
		g.Expect(h.memberCopy(g, "us", "fresh")).To(BeNil())
	})

	t.Run("a placed RayService keeps its copies untouched", func(t *testing.T) {
		g := NewWithT(t)
		h.createPolicy(g, "later", fleetv1alpha1.PlacementPolicySpec{})
		h.createRayService(g, "placed", "later")
		var clusters []string
		g.Eventually(func(g Gomega) {
			clusters = h.binding(g, "placed").Spec.Clusters
			g.Expect(clusters).To(HaveLen(1))
			g.Expect(h.memberCopy(g, clusters[0], "placed")).NotTo(BeNil())
		}, timeout, interval).Should(Succeed())
		before := h.memberCopy(g, clusters[0], "placed")
		writes := len(h.writes.naming("placed"))

		g.Eventually(func(g Gomega) {
			var pp fleetv1alpha1.PlacementPolicy
			g.Expect(h.hub.Get(ctx, types.NamespacedName{Namespace: ns, Name: "later"}, &pp)).To(Succeed())
			pp.Spec.Overrides = []fleetv1alpha1.ClusterOverride{brokenOverride()}
			g.Expect(h.hub.Update(ctx, &pp)).To(Succeed())
		}, timeout, interval).Should(Succeed())
		h.expectPolicyRejected(t, "placed", "later", clusters, writes)
		after := h.memberCopy(g, clusters[0], "placed")
		g.Expect(after).NotTo(BeNil())
		g.Expect(after.ResourceVersion).To(Equal(before.ResourceVersion))
	})
	NewWithT(t).Expect(h.writes.naming("fresh")).To(BeEmpty())
}
