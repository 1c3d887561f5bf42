package validation

import (
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/utils/ptr"
)

// The first Ray releases that understand each authentication mode.
var (
	minRayForTokenAuth    = version.MustParseGeneric("2.52.0")
	minRayForK8sTokenAuth = version.MustParseGeneric("2.55.0")
)

// authOptions checks that token authentication runs on a Ray new enough to enforce it (an older
// Ray would ignore the token and serve unauthenticated), and that Kubernetes token auth, a variant
// of token auth that verifies Kubernetes tokens instead of a shared secret, is only asked for as such.
func authOptions(spec *rayv1.RayClusterSpec, _ map[string]string) error {
	auth := spec.AuthOptions
	authPath := specPath.Child("authOptions")
	k8sAuth := auth != nil && ptr.Deref(auth.EnableK8sTokenAuth, false)
	if auth == nil || auth.Mode != rayv1.AuthModeToken {
		if k8sAuth {
			return field.Invalid(authPath.Child("enableK8sTokenAuth"), true,
				fmt.Sprintf("needs authOptions.mode %q (got %q)", rayv1.AuthModeToken, auth.Mode))
		}
		return nil
	}
	versionPath := specPath.Child("rayVersion")
	if spec.RayVersion == "" {
		return field.Required(versionPath, fmt.Sprintf(
			"authOptions.mode %q needs Ray %s or later; set rayVersion", rayv1.AuthModeToken, minRayForTokenAuth))
	}
	v, err := version.ParseGeneric(spec.RayVersion)
	if err != nil {
		return field.Invalid(versionPath, spec.RayVersion, fmt.Sprintf(
			"authOptions.mode %q needs a Ray version such as %s: %v", rayv1.AuthModeToken, minRayForTokenAuth, err))
	}
	if v.LessThan(minRayForTokenAuth) {
		return field.Invalid(versionPath, spec.RayVersion, fmt.Sprintf(
			"authOptions.mode %q needs Ray %s or later", rayv1.AuthModeToken, minRayForTokenAuth))
	}
	if !k8sAuth {
		return nil
	}
	if v.LessThan(minRayForK8sTokenAuth) {
		return field.Invalid(versionPath, spec.RayVersion, fmt.Sprintf(
			"authOptions.enableK8sTokenAuth needs Ray %s or later", minRayForK8sTokenAuth))
	}
	if name := ptr.Deref(auth.SecretName, ""); name != "" {
		return field.Invalid(authPath.Child("secretName"), name,
			"must not be set when authOptions.enableK8sTokenAuth is true: Kubernetes tokens replace the shared token")
	}
	return nil
}
