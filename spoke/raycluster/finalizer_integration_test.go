package raycluster

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// finishJob plays the Job controller: the cleanup Job completes or fails.
func finishJob(g Gomega, c client.Client, job *batchv1.Job, succeed bool) {
	now := metav1.Now()
	job.Status.StartTime = &now
	if succeed {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now},
		}
	}
	g.Expect(c.Status().Update(context.Background(), job)).To(Succeed())
}

func TestGCSFaultToleranceFinalizer(t *testing.T) {
	h := startHarness(t, nil)
	ctx := context.Background()

	cleanupJob := func(g Gomega, ns string) *batchv1.Job {
		var jobs batchv1.JobList
		g.Expect(h.c.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
		g.Expect(jobs.Items).To(HaveLen(1))
		return &jobs.Items[0]
	}
	gone := func(g Gomega, ns string) {
		err := h.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rc"}, &rayv1.RayCluster{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "RayCluster still exists: %v", err)
	}
	start := func(t *testing.T, g Gomega, ns string, annotations map[string]string) {
		h.namespace(t, g, ns)
		w := raybuilder.MakeRayCluster("rc", ns).WorkerGroup("g", 1, 0, 2).GCSFT("redis:6379")
		for k, v := range annotations {
			w = w.Annotation(k, v)
		}
		g.Expect(h.c.Create(ctx, w.Obj())).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(h.get(g, ns, "rc").Finalizers).To(ContainElement(labels.GCSFTRedisCleanupFinalizer))
			g.Expect(h.pods(g, ns, "rc", "")).To(HaveLen(2))
		}, timeout, interval).Should(Succeed())
		g.Expect(h.c.Delete(ctx, h.get(g, ns, "rc"))).To(Succeed())
	}

	t.Run("cleanup Job completes, then the cluster goes", func(t *testing.T) {
		g := NewWithT(t)
		start(t, g, "ft-ok", nil)
		var job *batchv1.Job
		g.Eventually(func(g Gomega) {
			g.Expect(h.pods(g, "ft-ok", "rc", "")).To(BeEmpty())
			job = cleanupJob(g, "ft-ok")
		}, timeout, interval).Should(Succeed())
		g.Expect(job.Labels).To(HaveKeyWithValue(labels.NodeType, string(rayv1.RedisCleanupNode)))
		g.Consistently(func(g Gomega) { g.Expect(h.get(g, "ft-ok", "rc").Finalizers).NotTo(BeEmpty()) }, "500ms", interval).Should(Succeed())

		finishJob(g, h.c, job, true)
		g.Eventually(func(g Gomega) { gone(g, "ft-ok") }, timeout, interval).Should(Succeed())
	})

	t.Run("a failed cleanup Job releases the cluster with a warning", func(t *testing.T) {
		g := NewWithT(t)
		start(t, g, "ft-failed", nil)
		var job *batchv1.Job
		g.Eventually(func(g Gomega) { job = cleanupJob(g, "ft-failed") }, timeout, interval).Should(Succeed())
		finishJob(g, h.c, job, false)
		g.Eventually(func(g Gomega) { gone(g, "ft-failed") }, timeout, interval).Should(Succeed())
		g.Eventually(func(g Gomega) {
			var events corev1.EventList
			g.Expect(h.c.List(ctx, &events, client.InNamespace("ft-failed"))).To(Succeed())
			var reasons []string
			for _, e := range events.Items {
				reasons = append(reasons, e.Reason)
			}
			g.Expect(reasons).To(ContainElement(reasonRedisCleanupFailed))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a stuck cleanup is abandoned after the deletion timeout", func(t *testing.T) {
		g := NewWithT(t)
		start(t, g, "ft-stuck", map[string]string{labels.GCSFTDeletionTimeout: "60"})
		g.Eventually(func(g Gomega) { cleanupJob(g, "ft-stuck") }, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) { g.Expect(h.get(g, "ft-stuck", "rc").Finalizers).NotTo(BeEmpty()) }, "500ms", interval).Should(Succeed())
		h.clock.Step(5 * time.Minute)
		g.Eventually(func(g Gomega) { gone(g, "ft-stuck") }, timeout, interval).Should(Succeed())
	})
}

func TestGCSFaultToleranceCleanupDisabled(t *testing.T) {
	h := startHarness(t, map[string]string{envEnableGCSFTRedisCleanup: "false"})
	g := NewWithT(t)
	ns := h.namespace(t, g, "ft-off")
	g.Expect(h.c.Create(context.Background(), raybuilder.MakeRayCluster("rc", ns).GCSFT("redis:6379").Obj())).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(h.pods(g, ns, "rc", "")).To(HaveLen(1)) }, timeout, interval).Should(Succeed())
	g.Expect(h.get(g, ns, "rc").Finalizers).To(BeEmpty())
}
