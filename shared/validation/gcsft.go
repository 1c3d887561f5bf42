package validation

import (
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rayfleet/rayfleet/shared/labels"
	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// Environment variables of the head's Ray container that configure Redis for GCS fault tolerance.
const (
	envRedisAddress  = "RAY_REDIS_ADDRESS"
	envRedisPassword = "REDIS_PASSWORD"
	envRedisUsername = "REDIS_USERNAME"
)

// gcsFaultTolerance keeps the two ways of configuring GCS fault tolerance apart: with
// gcsFaultToleranceOptions the operator wires Redis itself, so the legacy knobs would silently
// disagree with it; without it, a Redis address would turn fault tolerance on behind the
// operator's back (no Redis cleanup on deletion).
func gcsFaultTolerance(spec *rayv1.RayClusterSpec, annotations map[string]string) error {
	opts := spec.GcsFaultToleranceOptions
	if v := annotations[labels.FTEnabled]; v != "" && opts != nil {
		return field.Invalid(annotationPath(labels.FTEnabled), v,
			"must not be set together with spec.gcsFaultToleranceOptions; configure GCS fault tolerance with gcsFaultToleranceOptions only")
	}
	env := headEnv(spec)
	address, hasAddress := envVar(env, envRedisAddress)
	if !rayspec.GCSFaultTolerance(spec, annotations) && hasAddress {
		return field.Invalid(headEnvPath(envRedisAddress), address.Value,
			"setting it implicitly enables GCS fault tolerance, but spec.gcsFaultToleranceOptions is not set; "+
				"set gcsFaultToleranceOptions to enable GCS fault tolerance")
	}
	if opts == nil {
		return nil
	}
	// Passwords are secrets: these errors name the field, never its value.
	if spec.HeadGroupSpec.RayStartParams["redis-password"] != "" {
		return field.Forbidden(headPath.Child("rayStartParams").Key("redis-password"),
			"must not be set when spec.gcsFaultToleranceOptions is set; use gcsFaultToleranceOptions.redisPassword instead")
	}
	if _, ok := envVar(env, envRedisPassword); ok {
		return field.Forbidden(headEnvPath(envRedisPassword),
			"must not be set when spec.gcsFaultToleranceOptions is set; use gcsFaultToleranceOptions.redisPassword instead")
	}
	if hasAddress {
		return field.Invalid(headEnvPath(envRedisAddress), address.Value,
			"must not be set when spec.gcsFaultToleranceOptions is set; use gcsFaultToleranceOptions.redisAddress instead")
	}
	if v := annotations[labels.ExternalStorageNamespace]; v != "" {
		return field.Invalid(annotationPath(labels.ExternalStorageNamespace), v,
			"must not be set when spec.gcsFaultToleranceOptions is set; use gcsFaultToleranceOptions.externalStorageNamespace instead")
	}
	return nil
}

// redisUsername allows the Redis username only in gcsFaultToleranceOptions, with or without GCS
// fault tolerance enabled: the other places predate it and are not wired through.
func redisUsername(spec *rayv1.RayClusterSpec, _ map[string]string) error {
	const detail = "the Redis username can only be set with spec.gcsFaultToleranceOptions.redisUsername"
	if v := spec.HeadGroupSpec.RayStartParams["redis-username"]; v != "" {
		return field.Invalid(headPath.Child("rayStartParams").Key("redis-username"), v, detail)
	}
	if e, ok := envVar(headEnv(spec), envRedisUsername); ok {
		return field.Invalid(headEnvPath(envRedisUsername), e.Value, detail)
	}
	return nil
}
