//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// testDeletionDelaySeconds replaces the 60 s default rayClusterDeletionDelaySeconds, so that
// an old cluster's deletion is observable within a test and its delay still measurable.
const testDeletionDelaySeconds = 5

// serveApp and serveDeployment are the one application and deployment of serveConfig.
const (
	serveApp        = "fruit"
	serveDeployment = "MangoStand"
)

// serveConfig is a serveConfigV2 with one application whose deployment's user_config carries
// version, so that a test can change the config and see the change arrive in the dashboard.
func serveConfig(version string) string {
	return fmt.Sprintf(`applications:
- name: %s
  import_path: fruit.deployment_graph
  route_prefix: /fruit
  deployments:
  - name: %s
    num_replicas: 1
    user_config:
      version: %s
`, serveApp, serveDeployment, version)
}

// makeRayService starts a RayService with one worker group of one worker, the v1 serve config
// and a short deletion delay. The group keeps minReplicas 1: kwok runs no autoscaler, so a
// cluster that autoscales (as an incremental upgrade needs) still starts with one worker,
// enough to be ready and to have a serve endpoint.
func makeRayService(name, ns string) *raybuilder.RayServiceWrapper {
	return raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).
		ServeConfig(serveConfig("v1")).DeletionDelay(testDeletionDelaySeconds)
}

// bumpHeadEnv changes the head Pod template, so that the cluster spec hash changes and the
// RayService needs a new cluster.
func bumpHeadEnv(value string) func(*rayv1.RayService) {
	return func(rs *rayv1.RayService) {
		c := &rs.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]
		c.Env = append(c.Env, corev1.EnvVar{Name: "E2E_REVISION", Value: value})
	}
}

// createRayService creates rs and returns its key.
func createRayService(t *testing.T, rs *rayv1.RayService) types.NamespacedName {
	t.Helper()
	if err := env.k8s.Create(t.Context(), rs); err != nil {
		t.Fatalf("creating RayService %s/%s: %v", rs.Namespace, rs.Name, err)
	}
	return client.ObjectKeyFromObject(rs)
}

// getRayService reads the RayService inside an eventually check.
func getRayService(g gomega.Gomega, key types.NamespacedName) *rayv1.RayService {
	rs := &rayv1.RayService{}
	g.Expect(env.k8s.Get(context.Background(), key, rs)).To(gomega.Succeed())
	return rs
}

// updateRayService applies mutate to the latest version of the RayService, retrying conflicts.
func updateRayService(t *testing.T, key types.NamespacedName, mutate func(*rayv1.RayService)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rs := &rayv1.RayService{}
		if err := env.k8s.Get(t.Context(), key, rs); err != nil {
			return err
		}
		mutate(rs)
		return env.k8s.Update(t.Context(), rs)
	})
	if err != nil {
		t.Fatalf("updating RayService %s: %v", key, err)
	}
}

// expectServiceCondition asserts a RayService condition's status and reason.
func expectServiceCondition(g gomega.Gomega, rs *rayv1.RayService, ct rayv1.RayServiceConditionType,
	status metav1.ConditionStatus, reason rayv1.RayServiceConditionReason,
) {
	c := meta.FindStatusCondition(rs.Status.Conditions, string(ct))
	g.Expect(c).NotTo(gomega.BeNil(), "condition %s of %s/%s; conditions: %+v", ct, rs.Namespace, rs.Name, rs.Status.Conditions)
	g.Expect(c.Status).To(gomega.Equal(status), "condition %s: %+v", ct, c)
	g.Expect(c.Reason).To(gomega.Equal(string(reason)), "condition %s: %+v", ct, c)
}

// expectRayServiceReady waits until the RayService serves from one active cluster with every
// application RUNNING, no upgrade in progress, and the status written for its generation; it
// returns the RayService as last read.
func expectRayServiceReady(t *testing.T, key types.NamespacedName) *rayv1.RayService {
	t.Helper()
	var out *rayv1.RayService
	eventually(t, func(g gomega.Gomega) {
		rs := getRayService(g, key)
		g.Expect(rs.Status.ObservedGeneration).To(gomega.Equal(rs.Generation), "observedGeneration")
		expectServiceCondition(g, rs, rayv1.RayServiceReady, metav1.ConditionTrue, rayv1.NonZeroServeEndpoints)
		expectServiceCondition(g, rs, rayv1.UpgradeInProgress, metav1.ConditionFalse, rayv1.NoPendingCluster)
		g.Expect(rs.Status.ServiceStatus).To(gomega.Equal(rayv1.Running), "serviceStatus")
		g.Expect(rs.Status.NumServeEndpoints).To(gomega.BeNumerically(">", 0), "numServeEndpoints")
		g.Expect(rs.Status.ActiveServiceStatus.RayClusterName).NotTo(gomega.BeEmpty(), "active cluster")
		g.Expect(rs.Status.PendingServiceStatus.RayClusterName).To(gomega.BeEmpty(), "pending cluster")
		g.Expect(rs.Status.ActiveServiceStatus.Applications).To(gomega.HaveKeyWithValue(serveApp,
			gomega.HaveField("Status", rayv1.ApplicationStatusEnum.RUNNING)), "applications")
		out = rs
	})
	return out
}

// pendingClusterName waits until the RayService names a pending cluster other than notThis
// and returns its name.
func pendingClusterName(t *testing.T, key types.NamespacedName, notThis string) string {
	t.Helper()
	var name string
	eventually(t, func(g gomega.Gomega) {
		rs := getRayService(g, key)
		name = rs.Status.PendingServiceStatus.RayClusterName
		g.Expect(name).NotTo(gomega.BeEmpty(), "pending cluster")
		g.Expect(name).NotTo(gomega.Equal(notThis), "pending cluster")
	})
	return name
}

// standIn is the dashboard stand-in's record of one RayCluster.
func standIn(ns, cluster string) *raydashboard.Cluster {
	return env.dashboard.Cluster(ns, cluster)
}

// appDeploymentVersion digs the user_config version of the one deployment out of a config the
// stand-in received; "" when absent.
func appDeploymentVersion(cfg map[string]any) string {
	apps, _ := cfg["applications"].([]any)
	if len(apps) != 1 {
		return ""
	}
	app, _ := apps[0].(map[string]any)
	deps, _ := app["deployments"].([]any)
	if len(deps) != 1 {
		return ""
	}
	dep, _ := deps[0].(map[string]any)
	uc, _ := dep["user_config"].(map[string]any)
	v, _ := uc["version"].(string)
	return v
}

// rayServiceClusters lists the RayClusters in ns that belong to the RayService name, by name.
func rayServiceClusters(g gomega.Gomega, ns, name string) []string {
	list := &rayv1.RayClusterList{}
	g.Expect(env.k8s.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabels{labels.OriginatedFromCRName: name})).To(gomega.Succeed())
	out := make([]string, 0, len(list.Items))
	for _, rc := range list.Items {
		if rc.DeletionTimestamp == nil {
			out = append(out, rc.Name)
		}
	}
	return out
}

// serviceSelectedCluster returns the ray.io/cluster the Service ns/name selects.
func serviceSelectedCluster(g gomega.Gomega, ns, name string) string {
	svc := &corev1.Service{}
	g.Expect(env.k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, svc)).To(gomega.Succeed())
	return svc.Spec.Selector[labels.Cluster]
}

// expectDeletedNotBefore follows an old RayCluster until it is gone and checks the spoke kept
// it until the time recorded in its rayfleet.io/delete-after annotation: every look before
// that time must find it. It returns the recorded time.
func expectDeletedNotBefore(t *testing.T, key types.NamespacedName) time.Time {
	t.Helper()
	var deleteAfter time.Time
	eventually(t, func(g gomega.Gomega) {
		rc := getRayCluster(g, key)
		v := rc.Annotations[labels.DeleteAfter]
		g.Expect(v).NotTo(gomega.BeEmpty(), "%s annotation on %s", labels.DeleteAfter, key)
		var err error
		deleteAfter, err = time.Parse(time.RFC3339, v)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "%s=%q", labels.DeleteAfter, v)
	})
	eventually(t, func(g gomega.Gomega) {
		rc := &rayv1.RayCluster{}
		err := env.k8s.Get(context.Background(), key, rc)
		now := time.Now()
		if apierrors.IsNotFound(err) || (err == nil && rc.DeletionTimestamp != nil) {
			// RFC 3339 keeps whole seconds; the spoke deletes once the recorded time has passed.
			if now.Before(deleteAfter) {
				gomega.StopTrying(fmt.Sprintf("RayCluster %s deleted at %s, before its delete-after time %s",
					key, now.Format(time.RFC3339Nano), deleteAfter.Format(time.RFC3339))).Now()
			}
			return
		}
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(rc.DeletionTimestamp).NotTo(gomega.BeNil(), "RayCluster %s still there at %s (delete-after %s)",
			key, now.Format(time.RFC3339Nano), deleteAfter.Format(time.RFC3339))
	})
	return deleteAfter
}
