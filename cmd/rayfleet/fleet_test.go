package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/cmd/rayfleet/internal/membership"
	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
	"github.com/rayfleet/rayfleet/shared/hubaccess"
	"github.com/rayfleet/rayfleet/shared/testing/envtest"
)

// fakeToken stands in for the JWT the token controller writes; envtest runs no controllers.
const fakeToken = "fake-token-do-not-print"

// now is the fake clock's time in the status test.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// TestFleet drives join, status and unjoin as a user would, against a hub and a member API
// server.
func TestFleet(t *testing.T) {
	envs := envtest.StartN(t, 2, envtest.WithCRDDirectories("charts/rayfleet-hub/crds"))
	hub, member := envs[0], envs[1]
	dir := t.TempDir()
	hubFile, memberFile := filepath.Join(dir, "hub"), filepath.Join(dir, "member")
	for file, data := range map[string][]byte{hubFile: hub.KubeConfig, memberFile: member.KubeConfig} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	memberRest, err := clientcmd.RESTConfigFromKubeConfig(member.KubeConfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	joinArgs := []string{"join", "--hub-kubeconfig", hubFile, "--member-kubeconfig", memberFile, "--name", "m1"}

	// No token controller yet: join gives up with a message saying what to check.
	stdout, stderr, code := runCLI(t, append(joinArgs, "--token-timeout", "300ms")...)
	if code != 1 || !strings.Contains(stderr, "the token controller did not fill Secret rayfleet-system/rayfleet-hub-token within 300ms") {
		t.Fatalf("join without a token controller: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	fillToken(ctx, t, member.Client)
	stdout, stderr, code = runCLI(t, joinArgs...)
	if code != 0 || !strings.Contains(stdout, "member m1 joined: the hub reaches "+memberRest.Host) {
		t.Fatalf("join: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if strings.Contains(stdout+stderr, fakeToken) {
		t.Errorf("join printed the token: %q %q", stdout, stderr)
	}
	checkMember(ctx, t, member.Client)
	checkHub(ctx, t, hub.Client, memberRest.Host, memberRest.CAData)

	// An admin taints the member; re-joining with another server URL keeps the taint.
	taint := []byte(`{"spec":{"taints":[{"key":"gpu","value":"reserved","effect":"NoSchedule"}]}}`)
	mc := &fleetv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	if err := hub.Client.Patch(ctx, mc, client.RawPatch("application/merge-patch+json", taint), client.FieldOwner("admin")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code = runCLI(t, append(joinArgs, "--member-server", "https://m1.example:6443")...); code != 0 {
		t.Fatalf("re-join: code %d, stderr %q", code, stderr)
	}
	checkHub(ctx, t, hub.Client, "https://m1.example:6443", memberRest.CAData)
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
		{member.Client, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: membership.TokenSecretName, Namespace: "rayfleet-system"}}},
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

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runWith(t.Context(), args, streams{stdout: &out, stderr: &errOut, clock: clocktesting.NewFakePassiveClock(now)})
	return out.String(), errOut.String(), code
}

// fillToken plays the token controller for the Secret an earlier join created.
func fillToken(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	var s corev1.Secret
	key := client.ObjectKey{Namespace: membership.MemberNamespace, Name: membership.TokenSecretName}
	if err := c.Get(ctx, key, &s); err != nil {
		t.Fatalf("the token Secret join should have created: %v", err)
	}
	if s.Type != corev1.SecretTypeServiceAccountToken || s.Annotations[corev1.ServiceAccountNameKey] != membership.ServiceAccountName {
		t.Fatalf("token Secret type %q annotations %v", s.Type, s.Annotations)
	}
	s.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte(fakeToken)}
	if err := c.Update(ctx, &s); err != nil {
		t.Fatal(err)
	}
}

func checkMember(ctx context.Context, t *testing.T, c client.Client) {
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
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: membership.ServiceAccountName, Namespace: "rayfleet-system"}
	if len(binding.Subjects) != 1 || binding.Subjects[0] != want || binding.RoleRef.Name != membership.ClusterRoleName {
		t.Errorf("ClusterRoleBinding subjects %+v role %+v", binding.Subjects, binding.RoleRef)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "rayfleet-system", Name: membership.ServiceAccountName}, &corev1.ServiceAccount{}); err != nil {
		t.Error(err)
	}
}

func checkHub(ctx context.Context, t *testing.T, c client.Client, wantServer string, wantCA []byte) {
	t.Helper()
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: "rayfleet-system", Name: "m1"}, &s); err != nil {
		t.Fatal(err)
	}
	if s.Labels["sigs.k8s.io/multicluster-runtime-kubeconfig"] != "true" {
		t.Errorf("Secret labels = %v, want the kubeconfig provider's label", s.Labels)
	}
	cfg, err := clientcmd.Load(s.Data["kubeconfig"])
	if err != nil {
		t.Fatalf("the Secret's kubeconfig: %v", err)
	}
	rest, err := clientcmd.NewDefaultClientConfig(*cfg, nil).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rest.Host != wantServer || rest.BearerToken != fakeToken || !bytes.Equal(rest.CAData, wantCA) || rest.CertData != nil {
		t.Errorf("kubeconfig: server %q token %q CA %d bytes client cert %v; want %q, the ServiceAccount token, the member CA",
			rest.Host, rest.BearerToken, len(rest.CAData), rest.CertData != nil, wantServer)
	}
	var mc fleetv1alpha1.MemberCluster
	if err := c.Get(ctx, client.ObjectKey{Name: "m1"}, &mc); err != nil {
		t.Fatal(err)
	}
	if ref := mc.Spec.KubeconfigSecretRef; ref.Name != "m1" || ref.Key != "kubeconfig" {
		t.Errorf("MemberCluster kubeconfigSecretRef = %+v", ref)
	}
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
			{Name: "m2", SpecHash: old, Conditions: ready(metav1.ConditionFalse), NumServeEndpoints: 0},
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
		LastHeartbeatTime: &heartbeat,
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
serve/llm    m2        Pending         False   0           cdcdcdcd (want abababab)
serve/llm    m3        Removing        -       1           cdcdcdcd (want abababab)
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
