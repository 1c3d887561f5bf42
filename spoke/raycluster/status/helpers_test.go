package status

import (
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

const (
	testCluster = "rc"
	testNS      = "ns"
)

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

// headPod returns a builder for the test cluster's head Pod.
func headPod() *raybuilder.PodWrapper {
	return raybuilder.MakePod(testCluster+"-head", testNS).HeadOf(testCluster)
}

// workerPod returns a builder for a worker Pod of group "g" in the test cluster.
func workerPod(name string) *raybuilder.PodWrapper {
	return raybuilder.MakePod(name, testNS).WorkerOf(testCluster, "g")
}

// podList turns builders into the value slice Observed holds.
func podList(ws ...*raybuilder.PodWrapper) []corev1.Pod {
	out := make([]corev1.Pod, 0, len(ws))
	for _, w := range ws {
		out = append(out, *w.Obj())
	}
	return out
}

// headService returns a head Service with the given cluster IP and ports.
func headService(clusterIP string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: testCluster + "-head-svc", Namespace: testNS},
		Spec:       corev1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
	}
}

// cond is a condition as the tests expect it (transition time checked separately).
type cond struct {
	status  metav1.ConditionStatus
	reason  string
	message string
}

// expectCondition fails t unless st has condition typ as want; a zero want means absent.
func expectCondition(t *testing.T, st *rayv1.RayClusterStatus, typ rayv1.RayClusterConditionType, want cond) {
	t.Helper()
	got := meta.FindStatusCondition(st.Conditions, string(typ))
	if want == (cond{}) {
		if got != nil {
			t.Errorf("condition %s = %+v, want absent", typ, *got)
		}
		return
	}
	if got == nil {
		t.Errorf("condition %s absent, want %+v", typ, want)
		return
	}
	if g := (cond{got.Status, got.Reason, got.Message}); g != want {
		t.Errorf("condition %s = %+v, want %+v", typ, g, want)
	}
}

// withConditions is a status holding the given condition types set True or False.
func withConditions(conds map[rayv1.RayClusterConditionType]bool) rayv1.RayClusterStatus {
	var st rayv1.RayClusterStatus
	for typ, on := range conds {
		s := metav1.ConditionFalse
		if on {
			s = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: string(typ), Status: s, Reason: string(typ), LastTransitionTime: t0})
	}
	return st
}
