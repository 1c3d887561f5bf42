//go:build e2e

package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
)

// The team namespace and RayService of the README's example.
const (
	teamNS      = "team-a"
	rayService  = "fruit"
	hubReplicas = 2
)

// TestInstallFromTheREADME follows README.md's "Installing on real clusters" on clusters
// with real Nodes and checks what a platform team would: the Pods Ready through their probes,
// one hub leading and another taking over, a RayService placed, an upgrade that rolls the
// Pods without touching the workload, and what an uninstall leaves.
func TestInstallFromTheREADME(t *testing.T) {
	start := time.Now()
	e := newEnv(t)
	step(t, "helm lint", e.lint)
	step(t, "helm install", e.install)
	step(t, "the chart's hub identity has the contract's rules", e.hubIdentityRules)
	step(t, "hub and spoke Pods Ready", e.podsReady)
	step(t, "one hub leads", func(t *testing.T) { e.leader(t) })
	step(t, "join", e.join)
	step(t, "place a RayService", e.place)
	step(t, "a real Prometheus scrapes the Pods", e.scrape)
	step(t, "least privilege", e.checkPermissions)
	step(t, "no request of the Pods was forbidden", e.noForbidden)
	step(t, "leader handover", e.handover)
	step(t, "helm upgrade rolls the Pods, not the workload", e.upgrade)
	step(t, "no request of the new Pods was forbidden", e.noForbidden)
	step(t, "unjoin keeps the chart's hub identity", e.unjoin)
	step(t, "helm uninstall", e.uninstall)
	t.Logf("install e2e: %v", time.Since(start).Round(time.Millisecond))
}

// values are the README's install plus the test-only values:
//   - image.repository, image.tag: the image `make image` wrote and the Nodes imported;
//   - image.pullPolicy Never: the Nodes pull from no registry;
//   - hub replicas 2: to see leader election hand over;
//   - spoke nodeSelector: the member's real Node (its kwok Nodes run the Ray Pods only);
//   - spoke dashboard templates: the Ray dashboard stand-in, until real Ray runs.
func (e *env) values(t *testing.T, release string) string {
	t.Helper()
	common := fmt.Sprintf("image:\n  repository: %s\n  tag: %q\n  pullPolicy: Never\n", e.imageRepo, e.imageTag)
	var extra string
	switch release {
	case hubRelease:
		extra = fmt.Sprintf("replicas: %d\n", hubReplicas)
	case spokeRelease:
		extra = fmt.Sprintf("nodeSelector:\n  kubernetes.io/hostname: %s-node\ndashboard:\n  addressTemplate: %q\n  proxyAddressTemplate: %q\n",
			e.member.Name, raydashboard.DashboardTemplate(e.dashboardURL), raydashboard.ProxyTemplate(e.dashboardURL))
	}
	path := filepath.Join(e.dir, release+"-values.yaml")
	if err := os.WriteFile(path, []byte(common+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (e *env) chart(name string) string { return filepath.Join(e.repo, "charts", name) }

// releases pairs each release with its cluster.
func (e *env) releases() []struct {
	name    string
	cluster *localcluster.Cluster
} {
	return []struct {
		name    string
		cluster *localcluster.Cluster
	}{{hubRelease, e.hub}, {spokeRelease, e.member}}
}

// install creates the release namespace enforcing the restricted Pod Security Standard, then
// installs each chart as the README does.
func (e *env) install(t *testing.T) {
	ctx := t.Context()
	for _, r := range e.releases() {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
			"pod-security.kubernetes.io/enforce": "restricted",
		}}}
		if err := r.cluster.Client.Create(ctx, ns); err != nil {
			t.Fatal(err)
		}
		// The admission plugin is on: a Pod the restricted profile refuses is refused.
		root := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "root"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: e.imageRepo + ":" + e.imageTag}}},
		}
		if err := r.cluster.Client.Create(ctx, root, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
			t.Fatalf("a Pod with no securityContext in %s on %s: %v, want a PodSecurity refusal", namespace, r.cluster.Name, err)
		}
		out, err := e.helm(ctx, "install", r.name, e.chart(r.name), "--kubeconfig", r.cluster.Kubeconfig,
			"--namespace", namespace, "-f", e.values(t, r.name))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm install %s:\n%s", r.name, out)
	}
}

// podsReady waits for each release's Pods to be Running and Ready: the readiness probe
// answered on the health port, and the image ran as its non-root user with the restricted
// securityContext.
func (e *env) podsReady(t *testing.T) {
	ctx := t.Context()
	for _, r := range e.releases() {
		want := 1
		if r.name == hubRelease {
			want = hubReplicas
		}
		start := time.Now()
		eventually(t, func(g gomega.Gomega) {
			pods := e.releasePods(ctx, g, r.cluster, r.name)
			g.Expect(pods).To(gomega.HaveLen(want))
			for _, p := range pods {
				g.Expect(p.Status.Phase).To(gomega.Equal(corev1.PodRunning), "Pod %s: %s", p.Name, podSummary(&p))
				g.Expect(podReady(&p)).To(gomega.BeTrue(), "Pod %s Ready: %s", p.Name, podSummary(&p))
			}
		})
		t.Logf("%s: %d Pods Running and Ready in %v", r.name, want, time.Since(start).Round(time.Millisecond))
	}
}

// releasePods lists a release's Pods that are not being deleted.
func (e *env) releasePods(ctx context.Context, g gomega.Gomega, c *localcluster.Cluster, release string) []corev1.Pod {
	var pods corev1.PodList
	g.Expect(c.Client.List(ctx, &pods, client.InNamespace(namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": release})).To(gomega.Succeed())
	var live []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podSummary says why a Pod is not Ready yet: its containers' states.
func podSummary(p *corev1.Pod) string {
	var parts []string
	for _, cs := range p.Status.ContainerStatuses {
		switch {
		case cs.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting %s: %s", cs.Name, cs.State.Waiting.Reason, cs.State.Waiting.Message))
		case cs.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s terminated %s (%d): %s", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode, cs.State.Terminated.Message))
		default:
			parts = append(parts, fmt.Sprintf("%s running, ready=%t, restarts=%d", cs.Name, cs.Ready, cs.RestartCount))
		}
	}
	return fmt.Sprintf("phase %s, node %q, %s", p.Status.Phase, p.Spec.NodeName, strings.Join(parts, "; "))
}

// leader waits for the hub's leader-election Lease to be held by one of the hub's Pods and
// returns that Pod's name.
func (e *env) leader(t *testing.T) string {
	ctx := t.Context()
	var holder string
	eventually(t, func(g gomega.Gomega) {
		holder = e.leaseHolder(ctx, g)
		g.Expect(holder).NotTo(gomega.BeEmpty(), "no hub Pod holds a Lease in %s", namespace)
	})
	t.Logf("the hub's leader is Pod %s", holder)
	return holder
}

// leaseHolder is the live hub Pod holding a Lease in the release namespace, or "".
func (e *env) leaseHolder(ctx context.Context, g gomega.Gomega) string {
	var leases coordinationv1.LeaseList
	g.Expect(e.hub.Client.List(ctx, &leases, client.InNamespace(namespace))).To(gomega.Succeed())
	pods := e.releasePods(ctx, g, e.hub, hubRelease)
	for _, l := range leases.Items {
		if l.Spec.HolderIdentity == nil {
			continue
		}
		for _, p := range pods {
			// controller-runtime's identity is the hostname (the Pod's name), "_" and a UUID.
			if strings.HasPrefix(*l.Spec.HolderIdentity, p.Name+"_") {
				return p.Name
			}
		}
	}
	return ""
}

// join runs the README's steps 4 to 6: join with the address the hub's Pods reach the member
// at, label the MemberCluster, and grant the team's namespace.
func (e *env) join(t *testing.T) {
	ctx := t.Context()
	out, err := e.run(ctx, filepath.Join(e.rayfleetBin, "rayfleet"), "join",
		"--hub-kubeconfig", e.hub.Kubeconfig, "--member-kubeconfig", e.member.Kubeconfig,
		"--name", memberName, "--member-server", e.memberServer)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rayfleet join:\n%s", out)
	if _, err := e.kubectl(ctx, e.hub.Kubeconfig, "label", "membercluster", memberName, "region=us", "tier=prod"); err != nil {
		t.Fatal(err)
	}
	grant := `apiVersion: fleet.rayfleet.io/v1alpha1
kind: NamespaceGrant
metadata: {name: team-a}
spec:
  namespaces: [team-a]
  members: {clusterSelector: {matchLabels: {tier: prod}}}
`
	e.apply(t, e.hub.Kubeconfig, grant)
	eventually(t, func(g gomega.Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(e.hub.Client.Get(ctx, client.ObjectKey{Name: memberName}, &mc)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, "Ready")).To(gomega.BeTrue(),
			"MemberCluster %s Ready: %+v", memberName, mc.Status.Conditions)
	})
}

// apply pipes YAML to kubectl apply.
func (e *env) apply(t *testing.T, kubeconfig, yaml string) {
	t.Helper()
	path := filepath.Join(e.dir, fmt.Sprintf("apply-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := e.kubectl(t.Context(), kubeconfig, "apply", "-f", path); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("kubectl apply: %s", strings.TrimSpace(out))
	}
}

// rayServiceYAML is a small RayService whose Ray Pods go to the member's kwok Nodes.
const rayServiceYAML = `apiVersion: ray.io/v1
kind: RayService
metadata:
  name: fruit
  namespace: team-a
  annotations: {fleet.rayfleet.io/placement-policy: prod}
spec:
  serveConfigV2: |
    applications:
      - name: fruit
        import_path: fruit.deployment_graph
        route_prefix: /fruit
  rayClusterConfig:
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          nodeSelector: {type: kwok}
          containers:
            - name: ray-head
              image: rayproject/ray:2.46.0
              resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 2Gi}}
    workerGroupSpecs:
      - groupName: workers
        replicas: 1
        minReplicas: 0
        maxReplicas: 2
        rayStartParams: {}
        template:
          spec:
            nodeSelector: {type: kwok}
            containers:
              - name: ray-worker
                image: rayproject/ray:2.46.0
                resources: {requests: {cpu: "1", memory: 2Gi}, limits: {cpu: "1", memory: 2Gi}}
`

// place applies a PlacementPolicy and a RayService to the hub and waits for the binding, the
// member's copy and the hub RayService Ready.
func (e *env) place(t *testing.T) {
	ctx := t.Context()
	if _, err := e.kubectl(ctx, e.hub.Kubeconfig, "create", "namespace", teamNS); err != nil {
		t.Fatal(err)
	}
	e.apply(t, e.hub.Kubeconfig, `apiVersion: fleet.rayfleet.io/v1alpha1
kind: PlacementPolicy
metadata: {name: prod, namespace: team-a}
spec:
  clusterSelector: {matchLabels: {tier: prod}}
  clusters: 1
`)
	e.apply(t, e.hub.Kubeconfig, rayServiceYAML)
	start := time.Now()
	key := client.ObjectKey{Namespace: teamNS, Name: rayService}
	eventually(t, func(g gomega.Gomega) {
		var b fleetv1alpha1.RayServiceBinding
		g.Expect(e.hub.Client.Get(ctx, key, &b)).To(gomega.Succeed(), "the binding")
		g.Expect(b.Spec.Clusters).To(gomega.Equal([]string{memberName}))
		var copyRS rayv1.RayService
		g.Expect(e.member.Client.Get(ctx, key, &copyRS)).To(gomega.Succeed(), "the member's copy")
		var hubRS rayv1.RayService
		g.Expect(e.hub.Client.Get(ctx, key, &hubRS)).To(gomega.Succeed())
		ready := meta.FindStatusCondition(hubRS.Status.Conditions, string(rayv1.RayServiceReady))
		g.Expect(ready).NotTo(gomega.BeNil(), "hub Ready condition")
		g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionTrue), "hub Ready: %s: %s", ready.Reason, ready.Message)
	})
	t.Logf("RayService placed on %s and Ready on the hub %v after apply", memberName, time.Since(start).Round(time.Millisecond))
}

// handover deletes the leading hub Pod and waits for another to take the Lease.
func (e *env) handover(t *testing.T) {
	ctx := t.Context()
	old := e.leader(t)
	start := time.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: old}}
	if err := e.hub.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var holder string
	eventually(t, func(g gomega.Gomega) {
		holder = e.leaseHolder(ctx, g)
		g.Expect(holder).NotTo(gomega.Or(gomega.BeEmpty(), gomega.Equal(old)))
	})
	t.Logf("Pod %s deleted; Pod %s leads %v later", old, holder, time.Since(start).Round(time.Millisecond))
	e.podsReady(t)
}

// upgrade changes a value of each release: the Deployments roll to new Pods, and the
// member's copy of the RayService is the same object throughout.
func (e *env) upgrade(t *testing.T) {
	ctx := t.Context()
	key := client.ObjectKey{Namespace: teamNS, Name: rayService}
	var before rayv1.RayService
	if err := e.member.Client.Get(ctx, key, &before); err != nil {
		t.Fatal(err)
	}
	for _, r := range e.releases() {
		oldPods := map[types.UID]bool{}
		eventually(t, func(g gomega.Gomega) {
			for _, p := range e.releasePods(ctx, g, r.cluster, r.name) {
				oldPods[p.UID] = true
			}
		})
		out, err := e.helm(ctx, "upgrade", r.name, e.chart(r.name), "--kubeconfig", r.cluster.Kubeconfig,
			"--namespace", namespace, "-f", e.values(t, r.name), "--set", "logging.level=debug")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm upgrade %s:\n%s", r.name, out)
		start := time.Now()
		eventually(t, func(g gomega.Gomega) {
			var d appsv1.DeploymentList
			g.Expect(r.cluster.Client.List(ctx, &d, client.InNamespace(namespace),
				client.MatchingLabels{"app.kubernetes.io/instance": r.name})).To(gomega.Succeed())
			g.Expect(d.Items).To(gomega.HaveLen(1))
			dep := d.Items[0]
			want := *dep.Spec.Replicas
			g.Expect(dep.Status.ObservedGeneration).To(gomega.Equal(dep.Generation))
			g.Expect(dep.Status.UpdatedReplicas).To(gomega.Equal(want))
			g.Expect(dep.Status.ReadyReplicas).To(gomega.Equal(want))
			g.Expect(dep.Status.Replicas).To(gomega.Equal(want), "old Pods still there")
			for _, p := range e.releasePods(ctx, g, r.cluster, r.name) {
				g.Expect(oldPods).NotTo(gomega.HaveKey(p.UID), "Pod %s is from before the upgrade", p.Name)
				g.Expect(strings.Join(p.Spec.Containers[0].Args, " ")).To(gomega.ContainSubstring("--zap-log-level=debug"))
			}
			var after rayv1.RayService
			g.Expect(e.member.Client.Get(ctx, key, &after)).To(gomega.Succeed())
			g.Expect(after.UID).To(gomega.Equal(before.UID), "the member's copy was replaced")
			g.Expect(after.DeletionTimestamp).To(gomega.BeNil())
		})
		t.Logf("%s rolled to new Pods %v after helm upgrade", r.name, time.Since(start).Round(time.Millisecond))
	}
	e.leader(t)
	eventually(t, func(g gomega.Gomega) {
		var hubRS rayv1.RayService
		g.Expect(e.hub.Client.Get(ctx, key, &hubRS)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(hubRS.Status.Conditions, string(rayv1.RayServiceReady))).To(gomega.BeTrue())
	})
}

// uninstall removes both releases: their Deployments go; the CRDs stay (Helm never deletes
// crds/), and with them the RayServices on the hub and the member.
func (e *env) uninstall(t *testing.T) {
	ctx := t.Context()
	for _, r := range e.releases() {
		out, err := e.helm(ctx, "uninstall", r.name, "--kubeconfig", r.cluster.Kubeconfig, "--namespace", namespace, "--wait")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm uninstall %s: %s", r.name, strings.TrimSpace(out))
	}
	eventually(t, func(g gomega.Gomega) {
		for _, r := range e.releases() {
			g.Expect(e.releasePods(ctx, g, r.cluster, r.name)).To(gomega.BeEmpty(), "%s Pods", r.name)
		}
	})
	key := client.ObjectKey{Namespace: teamNS, Name: rayService}
	kept := []struct {
		cluster *localcluster.Cluster
		obj     client.Object
	}{
		{e.hub, crd("rayservices.ray.io")},
		{e.hub, crd("memberclusters.fleet.rayfleet.io")},
		{e.member, crd("rayclusters.ray.io")},
		{e.member, crd("clusterreports.fleet.rayfleet.io")},
		{e.hub, &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}},
		{e.member, &rayv1.RayService{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}},
	}
	for _, k := range kept {
		if err := k.cluster.Client.Get(ctx, client.ObjectKeyFromObject(k.obj), k.obj); err != nil {
			t.Errorf("after helm uninstall, %s %T %s: %v", k.cluster.Name, k.obj, client.ObjectKeyFromObject(k.obj), err)
		}
	}
	// The spoke chart's hub identity goes with it, revoking the hub's tokens.
	var role rbacv1.ClusterRole
	if err := e.member.Client.Get(ctx, client.ObjectKey{Name: hubaccess.ClusterRoleName}, &role); !apierrors.IsNotFound(err) {
		t.Errorf("after helm uninstall, ClusterRole %s on the member: %v, want NotFound", hubaccess.ClusterRoleName, err)
	}
	for _, name := range []string{"rayfleet-spoke-hub-guard-rayservices", "rayfleet-spoke-hub-guard-namespaces"} {
		vap := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
		vap.SetGroupVersionKind(schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingAdmissionPolicy"})
		if err := e.member.Client.Get(ctx, client.ObjectKeyFromObject(vap), vap); !apierrors.IsNotFound(err) {
			t.Errorf("after helm uninstall, the guard's ValidatingAdmissionPolicy %s: %v, want NotFound", name, err)
		}
	}
	var d appsv1.Deployment
	for _, r := range e.releases() {
		err := r.cluster.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: r.name}, &d)
		if !apierrors.IsNotFound(err) {
			t.Errorf("after helm uninstall, Deployment %s on %s: %v, want NotFound", r.name, r.cluster.Name, err)
		}
	}
}

// crd is a CustomResourceDefinition's metadata, which the clusters' client reads without the
// apiextensions types in its scheme.
func crd(name string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	m.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	return m
}
