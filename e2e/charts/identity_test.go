//go:build e2e

package charts

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/localfleet/localcluster"
)

// tokenLifetime outlives any run of the test; bound tokens are what a Pod would get too.
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
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](tokenLifetime)},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, sa, err)
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
	kc.Clusters[c.Name] = admin.Clusters[adminContext.Cluster]
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: sa}
	kc.CurrentContext = c.Name
	path := filepath.Join(e.dir, c.Name+"-"+sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, nil
}

// hubIdentityKubeconfig writes the kubeconfig the hub reaches the member with, from the hub's
// kubeconfig Secret that `rayfleet join` wrote.
func (e *env) hubIdentityKubeconfig(t *testing.T) string {
	t.Helper()
	var s corev1.Secret
	if err := e.hub.Client.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: memberName}, &s); err != nil {
		t.Fatalf("the hub's kubeconfig Secret for %s: %v", memberName, err)
	}
	path := filepath.Join(e.dir, "hub-identity-on-"+memberName+".kubeconfig")
	if err := os.WriteFile(path, s.Data["kubeconfig"], 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// labelledOnMember lists the member's identity-related objects carrying key=value.
func (e *env) labelledOnMember(t *testing.T, key, value string) []string {
	t.Helper()
	var found []string
	for _, list := range []client.ObjectList{
		&corev1.NamespaceList{}, &corev1.ServiceAccountList{}, &corev1.SecretList{},
		&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
	} {
		if err := e.member.Client.List(t.Context(), list, client.MatchingLabels{key: value}); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			obj := item.(client.Object)
			found = append(found, fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj)))
		}
	}
	return found
}
