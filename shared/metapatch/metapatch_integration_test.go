package metapatch_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/metapatch"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// answers records, for every successful PATCH, what it asked for and the answer's
// Content-Type: a RayService has no protobuf encoding, so a protobuf answer is its metadata.
type answers struct {
	mu    sync.Mutex
	types []string
	next  http.RoundTripper
}

func (a *answers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := a.next.RoundTrip(req)
	if err == nil && req.Method == http.MethodPatch && resp.StatusCode < 300 {
		a.mu.Lock()
		a.types = append(a.types, req.Header.Get("Accept")+" -> "+resp.Header.Get("Content-Type"))
		a.mu.Unlock()
	}
	return resp, err
}

// allMetadata reports whether every PATCH so far was answered with metadata only, and how many.
func (a *answers) allMetadata() (bool, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.types {
		asked, got, _ := strings.Cut(t, " -> ")
		if !strings.HasPrefix(asked, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;") ||
			got != "application/vnd.kubernetes.protobuf" {
			return false, len(a.types)
		}
	}
	return true, len(a.types)
}

func TestWritesReadMetadataOnly(t *testing.T) {
	ctx := context.Background()
	env := envtest.Start(t)
	rec := &answers{}
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { rec.next = rt; return rec })
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}); err != nil {
		t.Fatal(err)
	}
	rs := raybuilder.MakeRayService("rs", "ns").Obj()
	if err = env.Client.Create(ctx, rs); err != nil {
		t.Fatal(err)
	}

	// A merge patch with the optimistic lock: stored, and obj carries the new resourceVersion.
	base := rs.DeepCopy()
	rs.Finalizers = append(rs.Finalizers, "example.com/f")
	if err = metapatch.Patch(ctx, c, rs, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatalf("Patch: %v", err)
	}
	var stored rayv1.RayService
	if err = env.Client.Get(ctx, client.ObjectKeyFromObject(rs), &stored); err != nil {
		t.Fatal(err)
	}
	if len(stored.Finalizers) != 1 || stored.ResourceVersion != rs.ResourceVersion {
		t.Errorf("after Patch: stored finalizers %v at %s, obj at %s; want the finalizer, same resourceVersion",
			stored.Finalizers, stored.ResourceVersion, rs.ResourceVersion)
	}
	// The lock still holds: a patch from a stale base conflicts.
	stale := base.DeepCopy()
	stale.Labels = map[string]string{"a": "b"}
	if err = metapatch.Patch(ctx, c, stale, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); !apierrors.IsConflict(err) {
		t.Errorf("Patch from a stale base = %v, want a conflict", err)
	}

	// A status patch.
	base = rs.DeepCopy()
	rs.Status.ServiceStatus = rayv1.Running
	if err = metapatch.PatchStatus(ctx, c, rs, client.MergeFrom(base)); err != nil {
		t.Fatalf("PatchStatus: %v", err)
	}
	if err = env.Client.Get(ctx, client.ObjectKeyFromObject(rs), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.ServiceStatus != rayv1.Running || stored.ResourceVersion != rs.ResourceVersion {
		t.Errorf("after PatchStatus: stored status %q at %s, obj at %s; want Running, same resourceVersion",
			stored.Status.ServiceStatus, stored.ResourceVersion, rs.ResourceVersion)
	}

	// A server-side apply that creates the object: its metadata comes back.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}
	data := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"cm"},"data":{"k":"v"}}`)
	m, err := metapatch.Apply(ctx, c, cm, data, client.FieldOwner("test"), client.ForceOwnership)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	var storedCM corev1.ConfigMap
	if err = env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &storedCM); err != nil {
		t.Fatal(err)
	}
	if m.UID == "" || m.UID != storedCM.UID || m.ResourceVersion != storedCM.ResourceVersion || storedCM.Data["k"] != "v" {
		t.Errorf("Apply answered %s at %s; stored %s at %s with %v", m.UID, m.ResourceVersion, storedCM.UID,
			storedCM.ResourceVersion, storedCM.Data)
	}

	if ok, n := rec.allMetadata(); !ok || n != 3 {
		t.Errorf("answers to the patches: %v; want 3, each metadata only", rec.types)
	}
}
