//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

func TestRayServiceInitializingTimeout(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayService(t, makeRayService("timeout", ns).Annotation(labels.InitializingTimeout, "5s").Obj())
	// The first cluster is named in the status before its head is up, so the fault is in place
	// before the spoke can submit anything.
	first := pendingClusterName(t, key, "")
	standIn(ns, first).SetFault(raydashboard.Fault{DeployFailed: true})

	eventually(t, func(g gomega.Gomega) {
		rs := getRayService(g, key)
		expectServiceCondition(g, rs, rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceInitializingTimeout)
		g.Expect(rs.Status.ServiceStatus).NotTo(gomega.Equal(rayv1.Running))
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(gomega.BeEmpty())
		g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty())
		g.Expect(eventReasons(g, ns, "timeout")).To(gomega.ContainElement("RayServiceInitializingTimeout"))
	})
	// The dangling cluster goes after the deletion delay, and the timeout is terminal: no
	// new cluster is prepared, although the spec asks for one.
	eventually(t, func(g gomega.Gomega) {
		g.Expect(rayServiceClusters(g, ns, "timeout")).To(gomega.BeEmpty())
	})
	gomega.NewWithT(t).Consistently(func(g gomega.Gomega) {
		rs := getRayService(g, key)
		expectServiceCondition(g, rs, rayv1.RayServiceReady, metav1.ConditionFalse, rayv1.RayServiceInitializingTimeout)
		g.Expect(rayServiceClusters(g, ns, "timeout")).To(gomega.BeEmpty())
	}).WithTimeout(consistentlyFor).WithPolling(poll).Should(gomega.Succeed())
}

func TestRayServiceDashboardFailuresSurfaceAndRecover(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	key := createRayService(t, makeRayService("flaky", ns).Obj())
	first := pendingClusterName(t, key, "")
	dash := standIn(ns, first)
	dash.SetFault(raydashboard.Fault{HTTPStatus: http.StatusInternalServerError})

	t.Run("before the first deployment", func(t *testing.T) {
		eventually(t, func(g gomega.Gomega) {
			rs := getRayService(g, key)
			ready := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.RayServiceReady))
			g.Expect(ready).NotTo(gomega.BeNil())
			g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionFalse))
			g.Expect(ready.Message).To(gomega.And(gomega.ContainSubstring(first), gomega.ContainSubstring("500")))
			g.Expect(warningEvents(g, ns, "flaky", "FailedToGetServeApplicationStatuses")).To(
				gomega.ContainElement(gomega.ContainSubstring("500")))
		})
		g := gomega.NewWithT(t)
		g.Expect(dash.Submissions()).To(gomega.BeZero(), "nothing accepted while the dashboard fails")
		dash.SetFault(raydashboard.Fault{})
		rs := expectRayServiceReady(t, key)
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).To(gomega.Equal(first))
		g.Expect(dash.Submissions()).To(gomega.Equal(1))
	})

	t.Run("while serving", func(t *testing.T) {
		// Another status than before, so that the event is a new one rather than a repeat that
		// the event recorder folds into a series.
		dash.SetFault(raydashboard.Fault{HTTPStatus: http.StatusServiceUnavailable})
		// The endpoints still serve: the RayService stays Ready and says what is wrong.
		eventually(t, func(g gomega.Gomega) {
			g.Expect(warningEvents(g, ns, "flaky", "FailedToGetServeApplicationStatuses")).To(
				gomega.ContainElement(gomega.ContainSubstring("503")))
			rs := getRayService(g, key)
			expectServiceCondition(g, rs, rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints)
			ready := meta.FindStatusCondition(rs.Status.Conditions, string(rayv1.RayServiceReady))
			g.Expect(ready.Message).To(gomega.ContainSubstring("503"))
		})
		dash.SetFault(raydashboard.Fault{})
		eventually(t, func(g gomega.Gomega) {
			ready := meta.FindStatusCondition(getRayService(g, key).Status.Conditions, string(rayv1.RayServiceReady))
			g.Expect(ready).NotTo(gomega.BeNil())
			g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionTrue))
			g.Expect(ready.Message).NotTo(gomega.ContainSubstring("503"), "the problem is cleared from the message")
		})
		// The applications kept running: nothing needed resubmitting.
		gomega.NewWithT(t).Expect(dash.Submissions()).To(gomega.Equal(1))
	})
}

// warningEvents returns the messages of the Warning events with reason about the named object.
func warningEvents(g gomega.Gomega, ns, name, reason string) []string {
	list := &corev1.EventList{}
	g.Expect(env.k8s.List(context.Background(), list, client.InNamespace(ns))).To(gomega.Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Type == corev1.EventTypeWarning && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
