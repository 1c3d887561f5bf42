//go:build e2e

package charts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/localfleet"
	"github.com/rayfleet/rayfleet/shared/localfleet/raydashboard"
	"github.com/rayfleet/rayfleet/shared/testing/raybuilder"
)

// managedBy is the label `rayfleet join` puts on what it creates, and Helm on what it installs.
const managedBy = "app.kubernetes.io/managed-by"

// The hub and the spoke run on their charts' ServiceAccounts only, the member joins with the
// hub identity the spoke chart made, and a RayService goes through placement and aggregation:
// the charts' RBAC suffices. `kubectl auth can-i` then shows it is no more than needed, and
// unjoin leaves the chart's identity alone.
func TestChartsRunTheFleetOnLeastPrivilege(t *testing.T) {
	e := newEnv(t)
	step(t, "helm lint", e.lint)
	step(t, "helm install", e.install)
	step(t, "hub and spoke on the charts' ServiceAccounts", e.startAgents)
	step(t, "join with the chart's hub identity", e.join)
	step(t, "place and aggregate", e.placeAndAggregate)
	step(t, "least privilege", e.checkPermissions)
	step(t, "unjoin keeps the chart's hub identity", e.unjoin)
	step(t, "no request of the agents was forbidden", e.checkLogs)
}

// chart is the path of one of the charts.
func (e *env) chart(name string) string { return filepath.Join(e.repo, "charts", name) }

func (e *env) lint(t *testing.T) {
	for _, name := range []string{hubRelease, spokeRelease} {
		out, err := e.run(t.Context(), filepath.Join(e.k8sBin, "helm"), "lint", e.chart(name))
		if err != nil {
			t.Error(err)
			continue
		}
		t.Logf("helm lint %s:\n%s", name, out)
	}
}

// install installs both charts with no replicas: nothing here runs the image, the test runs
// the binaries itself.
func (e *env) install(t *testing.T) {
	for _, r := range []struct {
		release, kubeconfig string
		extra               []string
	}{
		// The hub chart grants the namespace placeAndAggregate uses its member.
		{hubRelease, e.hub.Kubeconfig, []string{"--set-json", `grants=[{"name":"serve","spec":{"namespaces":["serve"],"members":{"clusterSelector":{}}}}]`}},
		{spokeRelease, e.member.Kubeconfig, nil},
	} {
		args := append([]string{"install", r.release, e.chart(r.release),
			"--kubeconfig", r.kubeconfig, "-n", namespace, "--create-namespace", "--set", "replicas=0"}, r.extra...)
		out, err := e.run(t.Context(), filepath.Join(e.k8sBin, "helm"), args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("helm install %s:\n%s", r.release, out)
	}
	// The chart's hub identity carries exactly the contract's rules.
	var role rbacv1.ClusterRole
	if err := e.member.Client.Get(t.Context(), client.ObjectKey{Name: hubaccess.ClusterRoleName}, &role); err != nil {
		t.Fatalf("the spoke chart's hub ClusterRole: %v", err)
	}
	if !equality.Semantic.DeepEqual(role.Rules, hubaccess.HubRules()) {
		t.Errorf("ClusterRole %s rules:\n%+v\nwant hubaccess.HubRules():\n%+v", role.Name, role.Rules, hubaccess.HubRules())
	}
}

// startAgents runs bin/hub and bin/spoke with tokens of the ServiceAccounts the charts'
// Deployments name, as the charts' Pods would.
func (e *env) startAgents(t *testing.T) {
	ctx := t.Context()
	var err error
	if e.hubSA, err = e.serviceAccountKubeconfig(ctx, e.hub, hubRelease); err != nil {
		t.Fatal(err)
	}
	if e.spokeSA, err = e.serviceAccountKubeconfig(ctx, e.member, spokeRelease); err != nil {
		t.Fatal(err)
	}
	leader := []string{"--zap-devel", "--leader-elect", "--leader-election-namespace=" + namespace}
	hub, err := e.hub.StartManager(ctx, "hub", filepath.Join(e.rayfleetBin, "hub"), e.hubSA,
		append(leader, "--hub-namespace="+namespace), nil)
	if err != nil {
		t.Fatalf("starting bin/hub: %v", err)
	}
	e.agents = append(e.agents, hub)

	e.dashboard = raydashboard.New(raydashboard.Options{DeployDelay: localfleet.DefaultDashboardDeployDelay})
	dashURL, err := e.dashboard.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	spoke, err := e.member.StartManager(ctx, "spoke", filepath.Join(e.rayfleetBin, "spoke"), e.spokeSA, append(leader,
		"--dashboard-address-template="+raydashboard.DashboardTemplate(dashURL),
		"--serve-proxy-address-template="+raydashboard.ProxyTemplate(dashURL),
		"--report-interval="+localfleet.DefaultReportInterval.String()), nil)
	if err != nil {
		t.Fatalf("starting bin/spoke: %v", err)
	}
	e.agents = append(e.agents, spoke)
}

// join runs the real `rayfleet join` with admin kubeconfigs; it must find the spoke chart's
// hub identity and create nothing on the member.
func (e *env) join(t *testing.T) {
	out, err := e.run(t.Context(), filepath.Join(e.rayfleetBin, "rayfleet"), "join",
		"--hub-kubeconfig", e.hub.Kubeconfig, "--member-kubeconfig", e.member.Kubeconfig, "--name", memberName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rayfleet join:\n%s", out)
	if !strings.Contains(out, "using the hub identity installed by the spoke chart") {
		t.Errorf("join did not say it used the chart's hub identity")
	}
	if created := e.labelledOnMember(t, managedBy, "rayfleet"); len(created) > 0 {
		t.Errorf("join created %v on the member although the spoke chart installed the hub identity", created)
	}
}

// placeAndAggregate applies a RayService to the hub and waits for the full cycle: the member
// Ready, the copy on the member with its RayCluster, and the hub RayService Ready.
func (e *env) placeAndAggregate(t *testing.T) {
	ctx := t.Context()
	e.eventually(t, func(g gomega.Gomega) {
		var mc fleetv1alpha1.MemberCluster
		g.Expect(e.hub.Client.Get(ctx, client.ObjectKey{Name: memberName}, &mc)).To(gomega.Succeed())
		g.Expect(meta.IsStatusConditionTrue(mc.Status.Conditions, "Ready")).To(gomega.BeTrue(),
			"MemberCluster %s Ready: %+v", memberName, mc.Status.Conditions)
	})

	const ns, name = "serve", "fruit"
	if err := e.hub.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	rs := raybuilder.MakeRayService(name, ns).ReplicaBounds(0, 1, 2).Obj()
	rs.UID, rs.Generation = "", 0
	if err := e.hub.Client.Create(ctx, rs); err != nil {
		t.Fatalf("creating RayService %s/%s on the hub: %v", ns, name, err)
	}
	e.eventually(t, func(g gomega.Gomega) {
		var copyRS rayv1.RayService
		err := e.member.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &copyRS)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "the copy on the member")
		var clusters rayv1.RayClusterList
		g.Expect(e.member.Client.List(ctx, &clusters, client.InNamespace(ns))).To(gomega.Succeed())
		g.Expect(clusters.Items).NotTo(gomega.BeEmpty(), "RayClusters on the member")

		var hubRS rayv1.RayService
		g.Expect(e.hub.Client.Get(ctx, client.ObjectKeyFromObject(rs), &hubRS)).To(gomega.Succeed())
		ready := meta.FindStatusCondition(hubRS.Status.Conditions, string(rayv1.RayServiceReady))
		g.Expect(ready).NotTo(gomega.BeNil(), "hub Ready condition")
		g.Expect(ready.Status).To(gomega.Equal(metav1.ConditionTrue), "hub Ready: %s: %s", ready.Reason, ready.Message)
		g.Expect(hubRS.Status.NumServeEndpoints).To(gomega.BeNumerically(">", 0), "hub numServeEndpoints")
	})
}

// forbidden is how the API server's Forbidden errors read in the agents' logs: a rule missing
// from a chart that the cycle above did not need to succeed (an Event, a Lease renewal) still
// shows there.
const forbidden = "is forbidden: User "

// checkLogs fails on any Forbidden error bin/hub or bin/spoke logged.
func (e *env) checkLogs(t *testing.T) {
	for _, m := range e.agents {
		data, err := os.ReadFile(m.LogPath)
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, forbidden) {
				t.Errorf("%s: %s", m.Name, strings.TrimSpace(line))
			}
		}
	}
}

// unjoin runs the real `rayfleet unjoin` with the member's kubeconfig: the member leaves the
// hub, and the chart's hub identity stays for Helm to manage.
func (e *env) unjoin(t *testing.T) {
	ctx := t.Context()
	out, err := e.run(ctx, filepath.Join(e.rayfleetBin, "rayfleet"), "unjoin",
		"--hub-kubeconfig", e.hub.Kubeconfig, "--member-kubeconfig", e.member.Kubeconfig, "--name", memberName)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rayfleet unjoin:\n%s", out)
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: hubaccess.ServiceAccountName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: hubaccess.TokenRoleName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: hubaccess.TokenRoleName}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: hubaccess.ClusterRoleName}},
	} {
		if err := e.member.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			t.Errorf("after unjoin, the chart's %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		} else if obj.GetLabels()[managedBy] != "Helm" {
			t.Errorf("after unjoin, %T %s labels %v, want %s=Helm", obj, client.ObjectKeyFromObject(obj), obj.GetLabels(), managedBy)
		}
	}
	for _, obj := range []client.Object{
		&fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: memberName}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: memberName}},
	} {
		if err := e.hub.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, hub %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		} else if err == nil && obj.GetDeletionTimestamp() == nil {
			t.Errorf("after unjoin, hub %T %s still exists", obj, client.ObjectKeyFromObject(obj))
		}
	}
}
