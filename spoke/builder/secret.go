package builder

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// authTokenBytes is the entropy of a generated Ray auth token.
const authTokenBytes = 32

// NeedsAuthSecret reports whether the operator must create the auth Secret: token auth is on (any
// mode but "disabled", as KubeRay checks it), not delegated to Kubernetes, and the user did not
// name their own Secret.
func NeedsAuthSecret(rc *rayv1.RayCluster) bool {
	ao := rc.Spec.AuthOptions
	if ao == nil || ao.Mode == rayv1.AuthModeDisabled || rayspec.K8sTokenAuth(rc.Spec.AuthOptions) {
		return false
	}
	return ao.SecretName == nil || *ao.SecretName == ""
}

// AuthSecret builds the Secret holding the cluster's Ray auth token under key auth_token. The
// token is the caller's (see NewAuthToken), so this stays pure. KubeRay writes stringData; the
// stored object is the same.
func AuthSecret(rc *rayv1.RayCluster, token string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: ownedMeta(rc, shortName(rc.Name), map[string]string{labels.Cluster: rc.Name}),
		Data:       map[string][]byte{AuthTokenKey: []byte(token)},
	}
}

// NewAuthToken returns a fresh random token as KubeRay generates it: 32 random bytes, base64.
func NewAuthToken() (string, error) {
	b := make([]byte, authTokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate Ray auth token: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}
