package builder

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestAuthSecret(t *testing.T) {
	tests := []struct {
		name     string
		auth     *rayv1.AuthOptions
		wantNeed bool
		wantName string
	}{
		{name: "no auth", wantName: "rc"},
		{name: "disabled", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled}, wantName: "rc"},
		{name: "token", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken}, wantNeed: true, wantName: "rc"},
		{name: "mode left empty still gets a Secret, as in KubeRay", auth: &rayv1.AuthOptions{}, wantNeed: true, wantName: "rc"},
		{name: "user Secret", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("mine")}, wantName: "mine"},
		{name: "Kubernetes auth", auth: &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}, wantName: "rc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := newCluster("rc").Spec(func(s *rayv1.RayClusterSpec) { s.AuthOptions = tt.auth }).Obj()
			if got := NeedsAuthSecret(rc); got != tt.wantNeed {
				t.Errorf("NeedsAuthSecret = %v, want %v", got, tt.wantNeed)
			}
			if got := AuthSecretName(rc); got != tt.wantName {
				t.Errorf("AuthSecretName = %q, want %q", got, tt.wantName)
			}
		})
	}
	rc := newCluster("rc").Obj()
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "rc", Namespace: "ns", Labels: map[string]string{labels.Cluster: "rc"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rc, rayv1.GroupVersion.WithKind("RayCluster"))}},
		Data: map[string][]byte{"auth_token": []byte("tok")},
	}
	if diff := cmp.Diff(want, AuthSecret(rc, "tok")); diff != "" {
		t.Errorf("Secret (-want +got):\n%s", diff)
	}
	a, err := NewAuthToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewAuthToken()
	raw, err := base64.StdEncoding.DecodeString(a)
	if err != nil || len(raw) != 32 || a == b {
		t.Errorf("NewAuthToken = %q (%d bytes, err %v); want distinct base64 of 32 random bytes", a, len(raw), err)
	}
}
