package validation

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
)

func TestRayClusterSpecAuth(t *testing.T) {
	auth := func(version string, opts *rayv1.AuthOptions) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			rc.Spec.RayVersion = version
			rc.Spec.AuthOptions = opts
		}
	}
	token := func() *rayv1.AuthOptions { return &rayv1.AuthOptions{Mode: rayv1.AuthModeToken} }
	k8sToken := func() *rayv1.AuthOptions {
		return &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true)}
	}
	runSpecCases(t, []specCase{
		{name: "no auth, no version", mutate: auth("", nil)},
		{name: "auth disabled on an old Ray", mutate: auth("2.9.0", &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled})},
		{name: "token on 2.52.0", mutate: auth("2.52.0", token())},
		{name: "token on 3.0.0", mutate: auth("3.0.0", token())},
		{name: "token with a secret name", mutate: auth("2.52.0", &rayv1.AuthOptions{Mode: rayv1.AuthModeToken, SecretName: ptr.To("s")})},
		{name: "k8s token on 2.55.0", mutate: auth("2.55.0", k8sToken())},
		{name: "k8s token on 3.0.0", mutate: auth("3.0.0", k8sToken())},
		{
			name:   "token without rayVersion",
			mutate: auth("", token()),
			want:   `spec.rayVersion: Required value: authOptions.mode "token" needs Ray 2.52.0 or later; set rayVersion`,
		},
		{
			name:   "token on 2.50.0",
			mutate: auth("2.50.0", token()),
			want:   `spec.rayVersion: Invalid value: "2.50.0": authOptions.mode "token" needs Ray 2.52.0 or later`,
		},
		{
			name:   "token with an unparsable version",
			mutate: auth("invalid-version", token()),
			want: `spec.rayVersion: Invalid value: "invalid-version": authOptions.mode "token" needs a Ray version such as 2.52.0: ` +
				`could not parse "invalid-version" as version`,
		},
		{
			name:   "k8s token on 2.52.0",
			mutate: auth("2.52.0", k8sToken()),
			want:   `spec.rayVersion: Invalid value: "2.52.0": authOptions.enableK8sTokenAuth needs Ray 2.55.0 or later`,
		},
		{
			name: "k8s token with a secret name",
			mutate: auth("2.55.0", &rayv1.AuthOptions{
				Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true), SecretName: ptr.To("my-secret"),
			}),
			want: `spec.authOptions.secretName: Invalid value: "my-secret": must not be set when authOptions.enableK8sTokenAuth is true: ` +
				`Kubernetes tokens replace the shared token`,
		},
		{
			name: "k8s token with an empty secret name",
			mutate: auth("2.55.0", &rayv1.AuthOptions{
				Mode: rayv1.AuthModeToken, EnableK8sTokenAuth: ptr.To(true), SecretName: ptr.To(""),
			}),
		},
		{
			name:   "k8s token without mode",
			mutate: auth("2.55.0", &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(true)}),
			want:   `spec.authOptions.enableK8sTokenAuth: Invalid value: true: needs authOptions.mode "token" (got "")`,
		},
		{
			name:   "k8s token with mode disabled",
			mutate: auth("2.55.0", &rayv1.AuthOptions{Mode: rayv1.AuthModeDisabled, EnableK8sTokenAuth: ptr.To(true)}),
			want:   `spec.authOptions.enableK8sTokenAuth: Invalid value: true: needs authOptions.mode "token" (got "disabled")`,
		},
		{name: "k8s token explicitly off", mutate: auth("", &rayv1.AuthOptions{EnableK8sTokenAuth: ptr.To(false)})},
	})
}
