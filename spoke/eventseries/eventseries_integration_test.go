package eventseries_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/rayfleet/rayfleet/shared/testing/envtest"
	"github.com/rayfleet/rayfleet/spoke/eventseries"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// settle is how long the Events are watched for a late duplicate.
	settle = 2 * time.Second
)

// TestRepeatsCountInOneEvent records the same event three times about an object that changes
// in between, as a reconciler does across reconciles, and finds one Event counting them; an
// event differing only in its message stays an Event of its own.
func TestRepeatsCountInOneEvent(t *testing.T) {
	g := NewWithT(t)
	e := envtest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	mgr, err := ctrl.NewManager(e.Config, ctrl.Options{Scheme: e.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}})
	g.Expect(err).NotTo(HaveOccurred())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	rec := eventseries.New(mgr.GetEventRecorder("eventseries-test"), e.Scheme)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "events"}}
	g.Expect(e.Client.Create(ctx, ns)).To(Succeed())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns.Name}}
	g.Expect(e.Client.Create(ctx, cm)).To(Succeed())
	a := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns.Name}}

	emit := func(related *corev1.Service, note string) {
		rec.Eventf(cm, related, corev1.EventTypeNormal, "CreatedService", "Create", "%s", note)
	}
	// touch changes cm's resourceVersion, which the reference of each event used to carry.
	touch := func(n string) {
		cm.Data = map[string]string{"n": n}
		g.Expect(e.Client.Update(ctx, cm)).To(Succeed())
	}
	series := func(g Gomega) map[string]int32 {
		var list eventsv1.EventList
		g.Expect(e.Client.List(ctx, &list, client.InNamespace(ns.Name))).To(Succeed())
		out := map[string]int32{}
		for _, ev := range list.Items {
			g.Expect(ev.Regarding.Name).To(Equal(cm.Name))
			g.Expect(out).NotTo(HaveKey(ev.Note), "a second Event for %q", ev.Note)
			out[ev.Note] = 1
			if ev.Series != nil {
				out[ev.Note] = ev.Series.Count
			}
		}
		return out
	}

	// Each repeat waits for the one before to reach the API server, as repeats across
	// reconciles do; the broadcaster writes the first and the second and counts the third
	// in its series in memory (written when the series is refreshed or ends).
	emit(a, "Created Service a")
	g.Eventually(series).WithTimeout(timeout).WithPolling(interval).
		Should(Equal(map[string]int32{"Created Service a": 1}))
	touch("1")
	emit(a, "Created Service a")
	g.Eventually(series).WithTimeout(timeout).WithPolling(interval).
		Should(Equal(map[string]int32{"Created Service a": 2}))
	touch("2")
	emit(a, "Created Service a")
	emit(a, "Service a is not ready")
	want := map[string]int32{"Created Service a": 2, "Service a is not ready": 1}
	g.Eventually(series).WithTimeout(timeout).WithPolling(interval).Should(Equal(want))
	g.Consistently(series).WithTimeout(settle).WithPolling(interval).Should(Equal(want))
}
