//go:build e2e

package install

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// managedBy is the label `rayfleet join` puts on what it creates, and Helm on what it installs.
const managedBy = "app.kubernetes.io/managed-by"

// lint runs helm lint on both charts.
func (e *env) lint(t *testing.T) {
	for _, r := range e.releases() {
		out, err := e.helm(t.Context(), "lint", e.chart(r.name))
		if err != nil {
			t.Error(err)
			continue
		}
		t.Logf("helm lint %s:\n%s", r.name, out)
	}
}

// hubIdentityRules checks that the spoke chart's hub ClusterRole carries exactly the
// contract's rules.
func (e *env) hubIdentityRules(t *testing.T) {
	var role rbacv1.ClusterRole
	if err := e.member.Client.Get(t.Context(), client.ObjectKey{Name: hubaccess.ClusterRoleName}, &role); err != nil {
		t.Fatalf("the spoke chart's hub ClusterRole: %v", err)
	}
	if !equality.Semantic.DeepEqual(role.Rules, hubaccess.HubRules()) {
		t.Errorf("ClusterRole %s rules:\n%+v\nwant hubaccess.HubRules():\n%+v", role.Name, role.Rules, hubaccess.HubRules())
	}
}

// canI is one `kubectl auth can-i` question and the answer least privilege requires.
type canI struct {
	// who is the identity asking: "hub on member", "spoke on member" or "hub on hub".
	who string
	// args follow `kubectl auth can-i`: verb, resource, then -n NS or -A.
	args []string
	want bool
}

// checkPermissions asks the API servers, as each chart identity, what it may do: what the
// agents need is allowed, and reading Secrets or Pods of the member is not.
func (e *env) checkPermissions(t *testing.T) {
	ctx := t.Context()
	hubSA, err := e.serviceAccountKubeconfig(ctx, e.hub, hubRelease)
	if err != nil {
		t.Fatal(err)
	}
	spokeSA, err := e.serviceAccountKubeconfig(ctx, e.member, spokeRelease)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfigs := map[string]string{
		"hub on member":   e.hubIdentityKubeconfig(t),
		"spoke on member": spokeSA,
		"hub on hub":      hubSA,
	}
	checks := []canI{
		{who: "hub on member", args: []string{"get", "secrets", "-A"}, want: false},
		{who: "hub on member", args: []string{"list", "secrets", "-A"}, want: false},
		{who: "hub on member", args: []string{"get", "secrets", "-n", namespace}, want: false},
		{who: "hub on member", args: []string{"list", "pods", "-A"}, want: false},
		{who: "hub on member", args: []string{"create", "pods", "--subresource=exec", "-n", teamNS}, want: false},
		{who: "hub on member", args: []string{"list", "rayclusters.ray.io", "-A"}, want: false},
		{who: "hub on member", args: []string{"create", "rayservices.ray.io", "-n", teamNS}, want: true},
		{who: "hub on member", args: []string{"delete", "rayservices.ray.io", "-n", teamNS}, want: true},
		{who: "hub on member", args: []string{"create", "namespaces"}, want: true},
		{who: "hub on member", args: []string{"delete", "namespaces"}, want: false},
		{who: "hub on member", args: []string{"get", "clusterreports.fleet.rayfleet.io"}, want: true},
		{who: "spoke on member", args: []string{"list", "secrets", "-A"}, want: false},
		{who: "spoke on member", args: []string{"get", "secrets", "-n", teamNS}, want: true},
		{who: "hub on hub", args: []string{"get", "secrets", "-n", "kube-system"}, want: false},
		{who: "hub on hub", args: []string{"list", "secrets", "-n", namespace}, want: true},
		{who: "hub on hub", args: []string{"create", "memberclusters.fleet.rayfleet.io"}, want: false},
	}
	for _, c := range checks {
		got, err := e.canI(ctx, kubeconfigs[c.who], c.args)
		switch {
		case err != nil:
			t.Errorf("%s: %v", c.who, err)
		case got != c.want:
			t.Errorf("%-15s can-i %-50s = %-3s want %s", c.who, strings.Join(c.args, " "), yesNo(got), yesNo(c.want))
		default:
			t.Logf("%-15s can-i %-50s = %s", c.who, strings.Join(c.args, " "), yesNo(got))
		}
	}
}

// canI runs `kubectl auth can-i`, which exits 0 for yes and 1 for no.
func (e *env) canI(ctx context.Context, kubeconfig string, args []string) (bool, error) {
	out, err := e.kubectl(ctx, kubeconfig, append([]string{"auth", "can-i"}, args...)...)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &exit) && exit.ExitCode() == 1 && saidNo(out):
		return false, nil
	default:
		return false, err
	}
}

// saidNo tells a denial (a line "no", with the authorizer's reason after it if any) from
// kubectl failing to ask, which exits 1 too.
func saidNo(out string) bool {
	for line := range strings.Lines(out) {
		if line = strings.TrimSpace(line); line == "no" || strings.HasPrefix(line, "no - ") {
			return true
		}
	}
	return false
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// tokenLifetime outlives any run of the test.
const tokenLifetime = 2 * 60 * 60

// serviceAccountKubeconfig writes a kubeconfig for the ServiceAccount the release's Deployment
// runs as: the admin kubeconfig's cluster entry with a token from the TokenRequest API.
func (e *env) serviceAccountKubeconfig(ctx context.Context, c *localcluster.Cluster, release string) (string, error) {
	var deployments appsv1.DeploymentList
	if err := c.Client.List(ctx, &deployments, client.InNamespace(namespace),
		client.MatchingLabels{"app.kubernetes.io/instance": release}); err != nil {
		return "", fmt.Errorf("listing the Deployments of release %s: %w", release, err)
	}
	if len(deployments.Items) != 1 {
		return "", fmt.Errorf("release %s has %d Deployments in %s, want 1", release, len(deployments.Items), namespace)
	}
	sa := deployments.Items[0].Spec.Template.Spec.ServiceAccountName
	if sa == "" || sa == "default" {
		return "", fmt.Errorf("deployment %s/%s runs as ServiceAccount %q, want the chart's own", namespace, deployments.Items[0].Name, sa)
	}
	return e.tokenKubeconfig(ctx, c, namespace, sa, "")
}

// tokenKubeconfig writes a kubeconfig for ServiceAccount ns/sa of cluster c: the admin
// kubeconfig's cluster entry, with server instead of its address when server is set, and a
// token from the TokenRequest API.
func (e *env) tokenKubeconfig(ctx context.Context, c *localcluster.Cluster, ns, sa, server string) (string, error) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](tokenLifetime)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", ns, sa, err)
	}
	admin, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", c.Kubeconfig, err)
	}
	adminContext, ok := admin.Contexts[admin.CurrentContext]
	if !ok {
		return "", fmt.Errorf("%s has no current context", c.Kubeconfig)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[c.Name] = admin.Clusters[adminContext.Cluster].DeepCopy()
	if server != "" {
		kc.Clusters[c.Name].Server = server
	}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: sa}
	kc.CurrentContext = c.Name
	path := filepath.Join(e.dir, c.Name+"-"+ns+"-"+sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// hubIdentityKubeconfig writes the kubeconfig the hub reaches the member with, from the hub's
// kubeconfig Secret that `rayfleet join` wrote. Its server is the member's address in the
// Nodes' network; from the host the same API server answers on loopback, which its
// certificate names too.
func (e *env) hubIdentityKubeconfig(t *testing.T) string {
	t.Helper()
	var s corev1.Secret
	if err := e.hub.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: memberName}, &s); err != nil {
		t.Fatalf("the hub's kubeconfig Secret for %s: %v", memberName, err)
	}
	kc, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		t.Fatalf("the kubeconfig in Secret %s/%s: %v", namespace, memberName, err)
	}
	for name, c := range kc.Clusters {
		if c.Server != e.memberServer {
			t.Errorf("kubeconfig cluster %s has server %s, want --member-server %s", name, c.Server, e.memberServer)
		}
		c.Server = e.member.Config.Host
	}
	path := filepath.Join(e.dir, "hub-identity-on-"+memberName+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// forbidden is how the API server's Forbidden errors read in the agents' logs: a rule missing
// from a chart that the steps did not need to succeed (an Event, a Lease renewal) still shows
// there.
const forbidden = "is forbidden: User "

// noForbidden fails on any Forbidden error in the logs of the Pods on either real Node.
func (e *env) noForbidden(t *testing.T) {
	for _, c := range []*localcluster.Cluster{e.hub, e.member} {
		dir := filepath.Join(c.Dir, "node", "pod-logs")
		files, lines := 0, 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
				return err
			}
			files++
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for line := range strings.Lines(string(data)) {
				lines++
				switch {
				case strings.Contains(line, forbidden):
					t.Errorf("%s: %s", strings.TrimPrefix(path, dir+"/"), strings.TrimSpace(line))
				case strings.Contains(line, `"level":"error"`):
					// Errors a run may see (a conflict, a member not yet joined); shown for a reader.
					t.Logf("%s: %s", strings.TrimPrefix(path, dir+"/"), strings.TrimSpace(line))
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if files == 0 || lines == 0 {
			t.Errorf("%d Pod log files with %d lines under %s, want some", files, lines, dir)
		}
	}
}

// unjoin runs the real `rayfleet unjoin` with the member's kubeconfig: the member leaves the
// hub, the chart's hub identity stays for Helm to manage, and the member's copy stays.
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
