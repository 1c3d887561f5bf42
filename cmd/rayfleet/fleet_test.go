package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/membership"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// waitTimeout bounds waits on the API servers; generous for a busy 2-core machine.
const waitTimeout = 30 * time.Second

// now is the fake clock's time in the status test.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// TestFleet drives join, status and unjoin as a user would, against a hub and a member API
// server.
func TestFleet(t *testing.T) {
	hub, member, hubFile, memberFile := startHubAndMember(t)
	memberRest, err := clientcmd.RESTConfigFromKubeConfig(member.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	joinArgs := []string{"join", "--hub-kubeconfig", hubFile, "--member-kubeconfig", memberFile, "--name", "m1"}

	stdout, stderr, code := runCLI(t, joinArgs...)
	if code != 0 || !strings.Contains(stdout, "member m1 joined: the hub reaches "+memberRest.Host) {
		t.Fatalf("join: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "its bootstrap token expires at ") {
		t.Errorf("join does not say when the hub's token expires: %q", stdout)
	}
	if !strings.Contains(stdout, "applied the hub identity and its guard") {
		t.Errorf("join does not say it guarded the hub identity: %q", stdout)
	}
	checkMember(ctx, t, member.Client, membership.DefaultMemberNamespace)
	token := checkHub(ctx, t, hub.Client, "m1", memberRest.Host, memberRest.CAData, membership.DefaultMemberNamespace, membership.ServiceAccountName)
	if strings.Contains(stdout+stderr, token) {
		t.Errorf("join printed the token: %q %q", stdout, stderr)
	}
	if got := allowNodePortsOf(ctx, t, member.Client); got != "false" {
		t.Errorf("join's guard: %s = %s, want false", hubpolicy.VarAllowNodePorts, got)
	}

	// An admin taints the member; re-joining with another server URL keeps the taint, and
	// --allow-node-ports loosens the guard join applied the first time.
	taint := []byte(`{"spec":{"taints":[{"key":"gpu","value":"reserved","effect":"NoSchedule"}]}}`)
	mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	if err := hub.Client.Patch(ctx, mc, client.RawPatch("application/merge-patch+json", taint), client.FieldOwner("admin")); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, append(joinArgs, "--member-server", "https://m1.example:6443", "--allow-node-ports")...)
	if code != 0 {
		t.Fatalf("re-join: code %d, stderr %q", code, stderr)
	}
	if !strings.Contains(stdout, "their Services may be of type NodePort or LoadBalancer") {
		t.Errorf("re-join with --allow-node-ports does not say the guard allows them: %q", stdout)
	}
	if got := allowNodePortsOf(ctx, t, member.Client); got != "true" {
		t.Errorf("after re-join with --allow-node-ports: %s = %s, want true", hubpolicy.VarAllowNodePorts, got)
	}
	if rotated := checkHub(ctx, t, hub.Client, "m1", "https://m1.example:6443", memberRest.CAData,
		membership.DefaultMemberNamespace, membership.ServiceAccountName); rotated == token {
		t.Error("re-join kept the hub's bootstrap token, want it rotated")
	}
	if err := hub.Client.Get(ctx, client.ObjectKey{Name: "m1"}, mc); err != nil || len(mc.Spec.Taints) != 1 {
		t.Errorf("after re-join: taints %v, error %v; want the admin's taint kept", mc.Spec.Taints, err)
	}

	t.Run("status", func(t *testing.T) { testStatus(t, hub.Client, hubFile) })

	unjoinArgs := []string{"unjoin", "--hub-kubeconfig", hubFile, "--member-kubeconfig", memberFile, "--name", "m1"}
	for range 2 { // the second run finds nothing left and still succeeds
		if stdout, stderr, code = runCLI(t, unjoinArgs...); code != 0 || stdout != "member m1 unjoined\n" {
			t.Fatalf("unjoin: code %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	}
	for _, c := range []struct {
		cl  client.Client
		obj client.Object
	}{
		{hub.Client, &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}},
		{hub.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "m1", Namespace: "rayfleet-system"}}},
		{member.Client, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: membership.TokenRoleName, Namespace: "rayfleet-system"}}},
		{member.Client, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: membership.TokenRoleName, Namespace: "rayfleet-system"}}},
		{member.Client, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: membership.ServiceAccountName, Namespace: "rayfleet-system"}}},
		{member.Client, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: membership.ClusterRoleName}}},
		{member.Client, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: membership.ClusterRoleName}}},
	} {
		if err := c.cl.Get(ctx, client.ObjectKeyFromObject(c.obj), c.obj); !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, %T %s: error %v, want NotFound", c.obj, client.ObjectKeyFromObject(c.obj), err)
		}
	}
	if err := member.Client.Get(ctx, client.ObjectKey{Name: "rayfleet-system"}, &corev1.Namespace{}); err != nil {
		t.Errorf("unjoin removed the member namespace the spoke runs in: %v", err)
	}
}

// TestJoinIdentityOwners covers who owns the hub's identity on the member: a spoke chart
// (join creates nothing on the member and hands the hub the chart's token; unjoin leaves it)
// or join itself, in the default member namespace or another one.
func TestJoinIdentityOwners(t *testing.T) {
	hub, member, hubFile, memberFile := startHubAndMember(t)
	memberRest, err := clientcmd.RESTConfigFromKubeConfig(member.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// chartNamespace is where a chart-made identity is installed first; "" means none.
		chartNamespace string
		// memberNamespace is --member-namespace; "" means the flag's default.
		memberNamespace string
		// allowNodePorts passes --allow-node-ports, which a chart's guard does not heed.
		allowNodePorts bool
		wantJoinErr    string
	}{
		{name: "chart identity", chartNamespace: "rayfleet-system"},
		{name: "chart identity in another namespace", chartNamespace: "ray-spoke", memberNamespace: "ray-spoke", allowNodePorts: true},
		{name: "chart identity in another namespace, not named", chartNamespace: "ray-spoke",
			wantJoinErr: "ClusterRoleBinding rayfleet-hub-access (managed by Helm) binds ServiceAccount ray-spoke/rayfleet-hub-access: pass --member-namespace ray-spoke"},
		{name: "join identity in another namespace", memberNamespace: "fleet-agent"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			name := fmt.Sprintf("m%d", i)
			namespace := cmp.Or(tt.memberNamespace, membership.DefaultMemberNamespace)
			if tt.chartNamespace != "" {
				installChartIdentity(ctx, t, member.Client, tt.chartNamespace)
			}
			nsArgs := []string{"--name", name}
			if tt.memberNamespace != "" {
				nsArgs = append(nsArgs, "--member-namespace", tt.memberNamespace)
			}
			joinArgs := append([]string{"join", "--hub-kubeconfig", hubFile, "--member-kubeconfig", memberFile}, nsArgs...)
			if tt.allowNodePorts {
				joinArgs = append(joinArgs, "--allow-node-ports")
			}

			if tt.wantJoinErr != "" {
				stdout, stderr, code := runCLI(t, joinArgs...)
				if code != 1 || !strings.Contains(stderr, tt.wantJoinErr) {
					t.Fatalf("join: code %d, stdout %q, stderr %q; want an error containing %q", code, stdout, stderr, tt.wantJoinErr)
				}
				if created := createdByJoin(ctx, t, member.Client); len(created) > 0 {
					t.Errorf("a failed join created %v on the member", created)
				}
				return
			}
			stdout, stderr, code := runCLI(t, joinArgs...)
			if code != 0 {
				t.Fatalf("join: code %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			const usingChart = "using the hub identity installed by the spoke chart: ClusterRoleBinding "
			if tt.chartNamespace != "" {
				if want := usingChart + "rayfleet-hub-access (managed by Helm)\n"; !strings.HasPrefix(stdout, want) {
					t.Errorf("join stdout %q, want it to start with %q", stdout, want)
				}
				if created := createdByJoin(ctx, t, member.Client); len(created) > 0 {
					t.Errorf("join created %v on a member whose chart installed the hub identity", created)
				}
				const unheeded = "--allow-node-ports changed nothing: the spoke chart's guard applies; set its hubPolicy.allowNodePorts instead\n"
				if strings.Contains(stdout, unheeded) != tt.allowNodePorts {
					t.Errorf("join stdout %q: says %q %v, want %v", stdout, unheeded, !tt.allowNodePorts, tt.allowNodePorts)
				}
				token := checkHub(ctx, t, hub.Client, name, memberRest.Host, memberRest.CAData, tt.chartNamespace, hubaccess.ServiceAccountName)
				if strings.Contains(stdout+stderr, token) {
					t.Errorf("join printed the token: %q %q", stdout, stderr)
				}
			} else {
				if strings.Contains(stdout, usingChart) {
					t.Errorf("join stdout %q, want no chart identity used", stdout)
				}
				checkMember(ctx, t, member.Client, namespace)
				checkHub(ctx, t, hub.Client, name, memberRest.Host, memberRest.CAData, namespace, membership.ServiceAccountName)
			}

			stdout, stderr, code = runCLI(t, append([]string{"unjoin", "--hub-kubeconfig", hubFile, "--member-kubeconfig", memberFile}, nsArgs...)...)
			if code != 0 || !strings.HasPrefix(stdout, "member "+name+" unjoined\n") {
				t.Fatalf("unjoin: code %d, stdout %q, stderr %q", code, stdout, stderr)
			}
			checkUnjoined(ctx, t, hub.Client, member.Client, name, namespace, tt.chartNamespace != "", stdout)
		})
	}
}

// checkUnjoined checks that member name is gone from the hub, and that its identity on the
// member is gone too unless a chart installed it: then it is kept and listed in stdout.
func checkUnjoined(ctx context.Context, t *testing.T, hub, member client.Client, name, namespace string, chart bool, stdout string) {
	t.Helper()
	for _, obj := range []client.Object{
		&fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "rayfleet-system"}},
	} {
		if err := hub.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Errorf("after unjoin, hub %T %s: error %v, want NotFound", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	for _, obj := range []client.Object{
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: membership.ClusterRoleName}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: membership.TokenRoleName, Namespace: namespace}},
		&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: membership.ClusterRoleName}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: membership.TokenRoleName, Namespace: namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: membership.ServiceAccountName, Namespace: namespace}},
	} {
		err := member.Get(ctx, client.ObjectKeyFromObject(obj), obj)
		switch {
		case chart && err != nil:
			t.Errorf("unjoin removed the chart's %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		case !chart && !apierrors.IsNotFound(err):
			t.Errorf("after unjoin, member %T %s: error %v, want NotFound", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	if chart {
		want := fmt.Sprintf("  ClusterRoleBinding rayfleet-hub-access (managed by Helm)\n  RoleBinding %[1]s/rayfleet-hub-access-token (managed by Helm)\n"+
			"  ClusterRole rayfleet-hub-access (managed by Helm)\n  Role %[1]s/rayfleet-hub-access-token (managed by Helm)\n"+
			"  ServiceAccount %[1]s/rayfleet-hub-access (managed by Helm)\n", namespace)
		if !strings.HasSuffix(stdout, want) {
			t.Errorf("unjoin stdout %q, want it to list what it left:\n%s", stdout, want)
		}
	} else if stdout != "member "+name+" unjoined\n" {
		t.Errorf("unjoin stdout %q, want nothing left listed", stdout)
	}
}

// installChartIdentity creates what the spoke chart's hubAccess renders in namespace, and
// removes it when the test ends.
func installChartIdentity(ctx context.Context, t *testing.T, c client.Client, namespace string) {
	t.Helper()
	helm := map[string]string{membership.ManagedByLabel: "Helm"}
	helmMeta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: helm}
	}
	if err := client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		&corev1.ServiceAccount{ObjectMeta: helmMeta(hubaccess.ServiceAccountName, namespace)},
		&rbacv1.ClusterRole{ObjectMeta: helmMeta(hubaccess.ClusterRoleName, ""), Rules: hubaccess.HubRules()},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: helmMeta(hubaccess.ClusterRoleName, ""),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: hubaccess.ClusterRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: hubaccess.ServiceAccountName, Namespace: namespace}},
		},
		&rbacv1.Role{ObjectMeta: helmMeta(hubaccess.TokenRoleName, namespace), Rules: hubaccess.TokenRules(hubaccess.ServiceAccountName)},
		&rbacv1.RoleBinding{
			ObjectMeta: helmMeta(hubaccess.TokenRoleName, namespace),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: hubaccess.TokenRoleName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: hubaccess.ServiceAccountName, Namespace: namespace}},
		},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatalf("creating %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
		t.Cleanup(func() {
			// The test's context is gone by now.
			if err := c.Delete(context.Background(), obj); err != nil {
				t.Errorf("removing %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
			}
		})
	}
}

// createdByJoin lists the member's objects labelled as created by join.
func createdByJoin(ctx context.Context, t *testing.T, c client.Client) []string {
	t.Helper()
	var names []string
	for _, list := range []client.ObjectList{
		&corev1.NamespaceList{}, &corev1.ServiceAccountList{}, &corev1.SecretList{},
		&rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}, &rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
	} {
		if err := c.List(ctx, list, client.MatchingLabels{membership.ManagedByLabel: membership.ManagedByValue}); err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			obj := item.(client.Object)
			names = append(names, fmt.Sprintf("%T %s", obj, client.ObjectKeyFromObject(obj)))
		}
	}
	return names
}

// startHubAndMember starts a hub and a member API server and writes their admin kubeconfigs.
func startHubAndMember(t *testing.T) (hub, member *envtest.Env, hubFile, memberFile string) {
	t.Helper()
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	dir := t.TempDir()
	hubFile, memberFile = filepath.Join(dir, "hub"), filepath.Join(dir, "member")
	for file, data := range map[string][]byte{hubFile: envs[0].KubeConfig, memberFile: envs[1].KubeConfig} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return envs[0], envs[1], hubFile, memberFile
}

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runWith(t.Context(), args, streams{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: &errOut}, clock: clocktesting.NewFakePassiveClock(now)})
	return out.String(), errOut.String(), code
}

// checkMember checks the identity join created on the member in namespace.
func checkMember(ctx context.Context, t *testing.T, c client.Client, namespace string) {
	t.Helper()
	var role rbacv1.ClusterRole
	if err := c.Get(ctx, client.ObjectKey{Name: membership.ClusterRoleName}, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) != len(hubaccess.HubRules()) {
		t.Errorf("ClusterRole rules = %+v, want %+v", role.Rules, hubaccess.HubRules())
	}
	var binding rbacv1.ClusterRoleBinding
	if err := c.Get(ctx, client.ObjectKey{Name: membership.ClusterRoleName}, &binding); err != nil {
		t.Fatal(err)
	}
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: membership.ServiceAccountName, Namespace: namespace}
	if len(binding.Subjects) != 1 || binding.Subjects[0] != want || binding.RoleRef.Name != membership.ClusterRoleName {
		t.Errorf("ClusterRoleBinding subjects %+v role %+v", binding.Subjects, binding.RoleRef)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: membership.ServiceAccountName}, &corev1.ServiceAccount{}); err != nil {
		t.Error(err)
	}
}

// allowNodePortsOf is the expression of hubpolicy.VarAllowNodePorts in the guard's RayService
// policy on the member.
func allowNodePortsOf(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	var vap admissionregistrationv1.ValidatingAdmissionPolicy
	if err := c.Get(ctx, client.ObjectKey{Name: hubpolicy.DefaultName + hubpolicy.RayServicesSuffix}, &vap); err != nil {
		t.Fatal(err)
	}
	for _, v := range vap.Spec.Variables {
		if v.Name == hubpolicy.VarAllowNodePorts {
			return v.Expression
		}
	}
	t.Fatalf("guard %s has no variable %s: %+v", vap.Name, hubpolicy.VarAllowNodePorts, vap.Spec.Variables)
	return ""
}

// checkHub checks member name's registration on the hub: the kubeconfig Secret (server, CA,
// a token of the ServiceAccount saNamespace/saName) and the MemberCluster naming it, and
// returns the token.
func checkHub(ctx context.Context, t *testing.T, c client.Client, name, wantServer string, wantCA []byte, saNamespace, saName string) string {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "rayfleet-system", Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Labels[fleetv1alpha1.KubeconfigSecretLabel] != "true" {
		t.Errorf("Secret labels = %v, want the kubeconfig provider's label", s.Labels)
	}
	cfg, err := clientcmd.Load(s.Data[fleetv1alpha1.DefaultKubeconfigKey])
	if err != nil {
		t.Fatalf("the Secret's kubeconfig: %v", err)
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	wantSubject := "system:serviceaccount:" + saNamespace + ":" + saName
	if subject := tokenSubject(t, rest.BearerToken); rest.Host != wantServer || subject != wantSubject || !bytes.Equal(rest.CAData, wantCA) || rest.CertData != nil {
		t.Errorf("kubeconfig: server %q token of %q CA %d bytes client cert %v; want %q, a token of %q, the member CA",
			rest.Host, subject, len(rest.CAData), rest.CertData != nil, wantServer, wantSubject)
	}
	var mc fleetv1alpha1.MemberCluster
	if err := c.Get(ctx, client.ObjectKey{Name: name}, &mc); err != nil {
		t.Fatal(err)
	}
	if ref := mc.Spec.KubeconfigSecretRef; ref.Name != name || ref.Key != "kubeconfig" {
		t.Errorf("MemberCluster kubeconfigSecretRef = %+v", ref)
	}
	return rest.BearerToken
}

// tokenSubject is the subject a JWT claims (the API server that issued it checks it).
func tokenSubject(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the hub's token is no JWT (%d parts)", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.Subject
}

func testStatus(t *testing.T, c client.Client, hubFile string) {
	ctx := t.Context()
	for _, ns := range []string{"serve", "other"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	hash := strings.Repeat("ab", 32)
	old := strings.Repeat("cd", 32)
	ready := func(s metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: s, Reason: "R", LastTransitionTime: metav1.NewTime(now)}}
	}
	writeBinding(ctx, t, c, "serve", "llm", fleetv1alpha1.RayServiceBindingSpec{Clusters: []string{"m2", "m1"}, SpecHash: hash},
		fleetv1alpha1.RayServiceBindingStatus{Clusters: []fleetv1alpha1.ClusterStatus{
			{Name: "m1", SpecHash: hash, Conditions: ready(metav1.ConditionTrue), ServiceStatus: rayv1.Running, NumServeEndpoints: 2},
			// The member has not observed the spec the hub applied: the hub leaves the hash out.
			{Name: "m2", Conditions: ready(metav1.ConditionFalse), NumServeEndpoints: 0},
			{Name: "m3", SpecHash: old, NumServeEndpoints: 1},
		}})
	writeBinding(ctx, t, c, "serve", "asr", fleetv1alpha1.RayServiceBindingSpec{Clusters: []string{"m1"}, SpecHash: hash},
		fleetv1alpha1.RayServiceBindingStatus{})
	writeBinding(ctx, t, c, "other", "big", fleetv1alpha1.RayServiceBindingSpec{},
		fleetv1alpha1.RayServiceBindingStatus{Conditions: []metav1.Condition{{
			Type: "Placed", Status: metav1.ConditionFalse, Reason: "NoClusterFits", LastTransitionTime: metav1.NewTime(now)}}})

	var mc fleetv1alpha1.MemberCluster
	if err := c.Get(ctx, client.ObjectKey{Name: "m1"}, &mc); err != nil {
		t.Fatal(err)
	}
	heartbeat := metav1.NewTime(now.Add(-75 * time.Second))
	mc.Status = fleetv1alpha1.MemberClusterStatus{
		Conditions: ready(metav1.ConditionTrue),
		Capacity: &fleetv1alpha1.ClusterCapacity{Free: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("7500m"), corev1.ResourceMemory: resource.MustParse("10Gi"),
			"nvidia.com/gpu": resource.MustParse("2"), "google.com/tpu": resource.MustParse("4"),
			"hugepages-2Mi": resource.MustParse("0"),
		}},
		LastHeartbeatTime:         &heartbeat,
		LastHeartbeatObservedTime: &heartbeat,
	}
	if err := c.Status().Update(ctx, &mc); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, &fleetv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "m2"},
		Spec:       fleetv1alpha1.MemberClusterSpec{KubeconfigSecretRef: fleetv1alpha1.KubeconfigSecretRef{Name: "m2"}},
	}); err != nil {
		t.Fatal(err)
	}

	const members = `
MEMBER   READY   FREE GPUS                           FREE CPU   HEARTBEAT
m1       True    google.com/tpu=4,nvidia.com/gpu=2   7500m      75s ago
m2       -       -                                   -          -
`
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "all namespaces", args: []string{"-A"}, want: `RAYSERVICE   CLUSTER   STATUS          READY   ENDPOINTS   REVISION
other/big    <none>    NoClusterFits   -       -           -
serve/asr    m1        Pending         -       -           -
serve/llm    m1        Running         True    2           abababab
serve/llm    m2        Pending         False   0           (applying)
serve/llm    m3        Removing        -       1           cdcdcdcd
` + members},
		{name: "one namespace", args: []string{"-n", "other"}, want: `RAYSERVICE   CLUSTER   STATUS          READY   ENDPOINTS   REVISION
other/big    <none>    NoClusterFits   -       -           -
` + members},
		{name: "empty namespace", args: []string{"-n", "nothing"}, want: "RAYSERVICE   CLUSTER   STATUS   READY   ENDPOINTS   REVISION\n" + members},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append([]string{"status", "--hub-kubeconfig", hubFile}, tt.args...)...)
			if code != 0 || stdout != tt.want {
				t.Errorf("status: code %d, stderr %q, stdout:\n%s\nwant:\n%s", code, stderr, stdout, tt.want)
			}
		})
	}
	testStatusOutput(t, hubFile)
}

func writeBinding(ctx context.Context, t *testing.T, c client.Client, ns, name string,
	spec fleetv1alpha1.RayServiceBindingSpec, status fleetv1alpha1.RayServiceBindingStatus) {
	t.Helper()
	b := &fleetv1alpha1.RayServiceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	if err := c.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status = status
	if err := c.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
}
