package traffic

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// TestInformersQueueChanges reads demo's route through the informers and checks that what a
// settled RayService is no longer polled for reaches Changes: the route appearing, the
// gateway's verdict on it, and a backend deleted by someone else. A resync of unchanged
// objects queues nothing.
func TestInformersQueueChanges(t *testing.T) {
	e := startTrafficEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	inf := NewInformers(func(context.Context, string) (*rest.Config, error) { return e.cfg, nil }, e.c.Scheme(), demo.HubName)
	go func() { _ = inf.Start(ctx) }()
	e.apply(demo)
	// The first read starts the informers; their initial list queues demo once per object.
	NewWithT(t).Eventually(func() bool {
		drain(inf, 0)
		_, ok := inf.Reader(ctx, "", demoKey.Route.Namespace)
		return ok
	}, time.Minute, 50*time.Millisecond).Should(BeTrue(), "the informers synced")
	expectChange := func(what string) {
		t.Helper()
		select {
		case ev := <-inf.Changes():
			if ev.Object != demo.RayService {
				t.Fatalf("%s queued %v, want %v", what, ev.Object, demo.RayService)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s queued nothing", what)
		}
	}
	drain(inf, settle)

	var route gwv1.HTTPRoute
	if err := e.c.Get(ctx, demoKey.Route, &route); err != nil {
		t.Fatal(err)
	}
	route.Status.Parents = []gwv1.RouteParentStatus{{
		ParentRef:      gwv1.ParentReference{Namespace: ptr.To(gwv1.Namespace("gw")), Name: "edge"},
		ControllerName: "example.com/gateway",
		Conditions:     []metav1.Condition{cond(string(gwv1.RouteConditionAccepted), metav1.ConditionTrue, "Accepted", "")},
	}}
	if err := e.c.Status().Update(ctx, &route); err != nil {
		t.Fatal(err)
	}
	expectChange("the gateway accepting the route")
	drain(inf, settle)

	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: demoKey.Route.Namespace, Name: BackendName(demoKey, "ap")}}
	if err := e.c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	expectChange("a backend Service deleted")
	drain(inf, settle)

	// An object of the hub's without origin labels names no RayService.
	unlabelled := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: demoKey.Route.Namespace, Name: "stray", Labels: map[string]string{
			labels.OriginHub: demo.HubName, labels.TrafficCluster: "ap", labels.OriginNamespace: demoKey.RayService.Namespace}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "stray.example.com"}}
	if err := e.c.Create(ctx, unlabelled); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-inf.Changes():
		t.Errorf("an object naming no RayService queued %v", ev.Object)
	case <-time.After(2 * time.Second):
	}
}

// settle is how long drain waits for changes still being delivered.
const settle = 500 * time.Millisecond

// drain empties the queue of changes, waiting up to wait for one more each time.
func drain(inf *Informers, wait time.Duration) {
	for {
		select {
		case <-inf.Changes():
		case <-time.After(wait):
			return
		}
	}
}
