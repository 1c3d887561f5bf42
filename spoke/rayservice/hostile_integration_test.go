package rayservice

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// hostileService is a RayService the spoke must refuse: the reason of its Warning event and a
// part of the message its Ready condition and event carry.
type hostileService struct {
	rs      *rayv1.RayService
	reason  string
	message string
}

// hostileServices are the RayServices of issue 12's list that the API server stores as they are.
func hostileServices(ns string) []hostileService {
	bomb := "lol0: &lol0 [lol]\n"
	for i := 1; i <= 9; i++ {
		bomb += fmt.Sprintf("lol%d: &lol%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*lol%d,", i-1), 10), ","))
	}
	manyGroups := raybuilder.MakeRayService("many-groups", ns)
	for i := range validation.MaxWorkerGroups {
		manyGroups.WorkerGroup(fmt.Sprintf("g%d", i), 0)
	}
	return []hostileService{
		{
			rs:      raybuilder.MakeRayService(strings.Repeat("n", validation.MaxRayServiceNameLength+1), ns).Obj(),
			reason:  reasonInvalidMetadata,
			message: "must be no more than 47 characters (got 48)",
		},
		{
			rs:      raybuilder.MakeRayService("huge-config", ns).ServeConfig("applications: []\n#" + strings.Repeat("x", 1<<20)).Obj(),
			reason:  reasonInvalidSpec,
			message: "spec.serveConfigV2: Too long: is 1048594 bytes; a serveConfigV2 may have at most 524288",
		},
		{
			rs:      raybuilder.MakeRayService("malformed-config", ns).ServeConfig("applications:\n  - name: a\n   route_prefix: /a\n").Obj(),
			reason:  reasonInvalidSpec,
			message: "spec.serveConfigV2: Invalid value: is not valid YAML: yaml: line 2",
		},
		{
			rs:      raybuilder.MakeRayService("yaml-bomb", ns).ServeConfig(bomb).Obj(),
			reason:  reasonInvalidSpec,
			message: "document contains excessive aliasing",
		},
		{
			rs:      raybuilder.MakeRayService("huge-replicas", ns).ReplicaBounds(0, 0, math.MaxInt32).Replicas(0, math.MaxInt32).Obj(),
			reason:  reasonInvalidSpec,
			message: "asks for 2147483647 worker Pods",
		},
		{
			rs:      withHosts(raybuilder.MakeRayService("hosts-overflow", ns).Replicas(0, 4).Obj(), 1<<30),
			reason:  reasonInvalidSpec,
			message: "asks for 4294967296 worker Pods",
		},
		{
			rs:      raybuilder.MakeRayService("negative-replicas", ns).Replicas(0, -1).Obj(),
			reason:  reasonInvalidSpec,
			message: "spec.rayClusterConfig.workerGroupSpecs[0].replicas: Invalid value: -1",
		},
		{
			rs:      withHosts(raybuilder.MakeRayService("negative-hosts", ns).Obj(), -2),
			reason:  reasonInvalidSpec,
			message: "spec.rayClusterConfig.workerGroupSpecs[0].numOfHosts: Invalid value: -2",
		},
		{
			rs:      manyGroups.Obj(),
			reason:  reasonInvalidSpec,
			message: "spec.rayClusterConfig.workerGroupSpecs: Too many: 101: a RayCluster may have at most 100 worker groups",
		},
	}
}

// withHosts sets numOfHosts of the RayService's first worker group.
func withHosts(rs *rayv1.RayService, hosts int32) *rayv1.RayService {
	rs.Spec.RayClusterSpec.WorkerGroupSpecs[0].NumOfHosts = hosts
	return rs
}

// TestHostileRayServices applies hostile RayServices next to a good one: each bad one gets
// Ready=False/ValidationFailed and a Warning event naming its problem, and nothing is created
// for it; the good one, applied after them, still becomes Ready. What the API server refuses
// itself never reaches the spoke.
func TestHostileRayServices(t *testing.T) {
	h := startHarness(t)
	t.Run("refused by the spoke, next to a good one", func(t *testing.T) { refusedBySpoke(t, h) })
	t.Run("10,000 worker groups: refused by the API server", func(t *testing.T) { tooLargeForAPIServer(t, h) })
}

func refusedBySpoke(t *testing.T, h *harness) {
	ctx := context.Background()
	g := NewWithT(t)
	ns := h.namespace(g, "hostile")

	bad := hostileServices(ns)
	for _, b := range bad {
		g.Expect(h.c.Create(ctx, b.rs)).To(Succeed(), "create %s", b.rs.Name)
	}
	for _, b := range bad {
		g.Eventually(func(g Gomega) {
			rs := h.rayService(g, ns, b.rs.Name)
			c := condition(rs, rayv1.RayServiceReady)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(string(rayv1.RayServiceValidationFailed)))
			g.Expect(c.Message).To(ContainSubstring(b.message))
			g.Expect(c.ObservedGeneration).To(Equal(rs.Generation))
			g.Expect(h.eventNote(g, ns, b.rs.Name, b.reason)).To(ContainSubstring(b.message))
		}, timeout, interval).Should(Succeed(), "RayService %s", b.rs.Name)
	}

	// The good one is applied last, with an unknown field: the API server drops the field and
	// says so in a warning, and the reconciler, busy with the bad ones, still brings it up.
	good := raybuilder.MakeRayService("good", ns).Obj()
	warnings := createWithUnknownField(t, h, good)
	g.Expect(warnings).To(ContainElement(ContainSubstring(`unknown field "spec.replicaz"`)))
	rc := h.waitForPending(g, ns, "good")
	h.bringUp(g, ns, rc)
	h.waitReady(g, ns, "good", rc)

	// Nothing was ever created for the bad ones: no RayCluster, no Service.
	g.Consistently(func(g Gomega) {
		for _, c := range h.clusters(g, ns) {
			g.Expect(c.Labels).To(HaveKeyWithValue(labels.OriginatedFromCRName, "good"))
		}
		var svcs corev1.ServiceList
		g.Expect(h.c.List(ctx, &svcs, client.InNamespace(ns))).To(Succeed())
		for _, s := range svcs.Items {
			g.Expect(s.Name).To(HavePrefix("good-"), "Service %s", s.Name)
		}
	}, settle, interval).Should(Succeed())
}

// tooLargeForAPIServer shows what a client gets for 10,000 worker groups: the API server
// refuses a request body over 3 MiB (and etcd an object over 1.5 MiB) before the spoke ever
// sees it; the spoke's own limit, validation.MaxWorkerGroups, answers the specs in between.
func tooLargeForAPIServer(t *testing.T, h *harness) {
	g := NewWithT(t)
	ns := h.namespace(g, "too-large")
	w := raybuilder.MakeRayService("ten-thousand-groups", ns)
	for i := range 10_000 {
		w.WorkerGroup(fmt.Sprintf("group-%d", i), 0)
	}
	err := h.c.Create(context.Background(), w.Obj())
	g.Expect(err).To(MatchError(ContainSubstring("Request entity too large")))
	g.Expect(h.exists(ns, "ten-thousand-groups", &rayv1.RayService{})).To(BeFalse())
}

// warningRecorder keeps the warnings the API server sends back.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

// createWithUnknownField creates rs with an unknown spec field: first with strict field
// validation, which the API server refuses naming the field (what kubectl, strict by default,
// shows), then as controller-runtime's client does by default, which the API server accepts,
// dropping the field and warning. It returns the warnings of the second create.
func createWithUnknownField(t *testing.T, h *harness, rs *rayv1.RayService) []string {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rs)
	g.Expect(err).NotTo(HaveOccurred())
	obj := &unstructured.Unstructured{Object: content}
	g.Expect(unstructured.SetNestedField(obj.Object, int64(3), "spec", "replicaz")).To(Succeed())

	recorder := &warningRecorder{}
	cfg := rest.CopyConfig(h.env.Config)
	cfg.WarningHandler = recorder
	c, err := client.New(cfg, client.Options{Scheme: h.env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	err = c.Create(ctx, obj.DeepCopy(), client.FieldValidation(metav1.FieldValidationStrict))
	g.Expect(err).To(MatchError(ContainSubstring(`strict decoding error: unknown field "spec.replicaz"`)))
	g.Expect(h.exists(rs.Namespace, rs.Name, &rayv1.RayService{})).To(BeFalse())

	g.Expect(c.Create(ctx, obj)).To(Succeed())
	stored := &unstructured.Unstructured{}
	stored.SetGroupVersionKind(rayv1.GroupVersion.WithKind("RayService"))
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), stored)).To(Succeed())
	_, found, err := unstructured.NestedFieldNoCopy(stored.Object, "spec", "replicaz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse(), "the API server prunes unknown fields")

	recorder.mu.Lock()
	defer recorder.mu.Unlock()
	return append([]string(nil), recorder.warnings...)
}
