package validation

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

func TestRayClusterSpecGCSFaultTolerance(t *testing.T) {
	const (
		envPath  = "spec.headGroupSpec.template.spec.containers[0].env"
		implicit = `setting it implicitly enables GCS fault tolerance, but spec.gcsFaultToleranceOptions is not set; ` +
			`set gcsFaultToleranceOptions to enable GCS fault tolerance`
	)
	type setup struct {
		annotations map[string]string
		options     bool
		env         []corev1.EnvVar
		params      map[string]string
	}
	redisAddress := corev1.EnvVar{Name: "RAY_REDIS_ADDRESS", Value: "redis:6379"}
	tests := []struct {
		name string
		setup
		want string
	}{
		{name: "neither annotation nor options"},
		{name: "options only", setup: setup{options: true}},
		{name: "legacy annotation true only", setup: setup{annotations: map[string]string{labels.FTEnabled: "true"}}},
		{
			name:  "annotation false and options",
			setup: setup{annotations: map[string]string{labels.FTEnabled: "false"}, options: true},
			want: `metadata.annotations[ray.io/ft-enabled]: Invalid value: "false": must not be set together with ` +
				`spec.gcsFaultToleranceOptions; configure GCS fault tolerance with gcsFaultToleranceOptions only`,
		},
		{
			name:  "annotation true and options",
			setup: setup{annotations: map[string]string{labels.FTEnabled: "true"}, options: true},
			want: `metadata.annotations[ray.io/ft-enabled]: Invalid value: "true": must not be set together with ` +
				`spec.gcsFaultToleranceOptions; configure GCS fault tolerance with gcsFaultToleranceOptions only`,
		},
		{
			name:  "RAY_REDIS_ADDRESS without fault tolerance",
			setup: setup{env: []corev1.EnvVar{redisAddress}},
			want:  envPath + `[RAY_REDIS_ADDRESS]: Invalid value: "redis:6379": ` + implicit,
		},
		{
			name:  "RAY_REDIS_ADDRESS with annotation false",
			setup: setup{annotations: map[string]string{labels.FTEnabled: "false"}, env: []corev1.EnvVar{redisAddress}},
			want:  envPath + `[RAY_REDIS_ADDRESS]: Invalid value: "redis:6379": ` + implicit,
		},
		{
			name:  "RAY_REDIS_ADDRESS with legacy annotation TRUE (any case)",
			setup: setup{annotations: map[string]string{labels.FTEnabled: "TRUE"}, env: []corev1.EnvVar{redisAddress}},
		},
		{
			name:  "RAY_REDIS_ADDRESS with options",
			setup: setup{options: true, env: []corev1.EnvVar{redisAddress}},
			want: envPath + `[RAY_REDIS_ADDRESS]: Invalid value: "redis:6379": must not be set when spec.gcsFaultToleranceOptions is set; ` +
				`use gcsFaultToleranceOptions.redisAddress instead`,
		},
		{
			name:  "external storage namespace annotation with options",
			setup: setup{annotations: map[string]string{labels.ExternalStorageNamespace: "myns"}, options: true},
			want: `metadata.annotations[ray.io/external-storage-namespace]: Invalid value: "myns": must not be set when ` +
				`spec.gcsFaultToleranceOptions is set; use gcsFaultToleranceOptions.externalStorageNamespace instead`,
		},
		{
			name: "external storage namespace annotation with legacy annotation",
			setup: setup{annotations: map[string]string{
				labels.FTEnabled: "true", labels.ExternalStorageNamespace: "myns",
			}},
		},
		{
			name:  "redis-password rayStartParam with options; the password is not echoed",
			setup: setup{options: true, params: map[string]string{"redis-password": "s3cret"}},
			want: `spec.headGroupSpec.rayStartParams[redis-password]: Forbidden: must not be set when spec.gcsFaultToleranceOptions ` +
				`is set; use gcsFaultToleranceOptions.redisPassword instead`,
		},
		{
			name:  "redis-password rayStartParam with legacy annotation",
			setup: setup{annotations: map[string]string{labels.FTEnabled: "true"}, params: map[string]string{"redis-password": "s3cret"}},
		},
		{
			name:  "REDIS_PASSWORD env with options",
			setup: setup{options: true, env: []corev1.EnvVar{{Name: "REDIS_PASSWORD", Value: "s3cret"}}},
			want: envPath + `[REDIS_PASSWORD]: Forbidden: must not be set when spec.gcsFaultToleranceOptions is set; ` +
				`use gcsFaultToleranceOptions.redisPassword instead`,
		},
		{
			name:  "password is reported before address",
			setup: setup{options: true, env: []corev1.EnvVar{redisAddress, {Name: "REDIS_PASSWORD", Value: "s3cret"}}},
			want: envPath + `[REDIS_PASSWORD]: Forbidden: must not be set when spec.gcsFaultToleranceOptions is set; ` +
				`use gcsFaultToleranceOptions.redisPassword instead`,
		},
		{
			name:  "redis-username rayStartParam without fault tolerance",
			setup: setup{params: map[string]string{"redis-username": "ray"}},
			want: `spec.headGroupSpec.rayStartParams[redis-username]: Invalid value: "ray": the Redis username can only be set ` +
				`with spec.gcsFaultToleranceOptions.redisUsername`,
		},
		{
			name:  "REDIS_USERNAME env with options",
			setup: setup{options: true, env: []corev1.EnvVar{{Name: "REDIS_USERNAME", Value: "ray"}}},
			want: envPath + `[REDIS_USERNAME]: Invalid value: "ray": the Redis username can only be set ` +
				`with spec.gcsFaultToleranceOptions.redisUsername`,
		},
		{
			name:  "REDIS_USERNAME env with legacy annotation",
			setup: setup{annotations: map[string]string{labels.FTEnabled: "true"}, env: []corev1.EnvVar{{Name: "REDIS_USERNAME", Value: "ray"}}},
			want: envPath + `[REDIS_USERNAME]: Invalid value: "ray": the Redis username can only be set ` +
				`with spec.gcsFaultToleranceOptions.redisUsername`,
		},
		{
			name:  "empty redis-username is ignored",
			setup: setup{params: map[string]string{"redis-username": ""}},
		},
		{
			name:  "credentials in options are fine",
			setup: setup{options: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := cluster().Obj()
			rc.Annotations = tt.annotations
			head := &rc.Spec.HeadGroupSpec
			head.Template.Spec.Containers[0].Env = tt.env
			for k, v := range tt.params {
				head.RayStartParams[k] = v
			}
			if tt.options {
				rc.Spec.GcsFaultToleranceOptions = &rayv1.GcsFaultToleranceOptions{
					RedisAddress:  "redis:6379",
					RedisUsername: &rayv1.RedisCredential{Value: "ray"},
					RedisPassword: &rayv1.RedisCredential{ValueFrom: &corev1.EnvVarSource{
						SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "redis"}, Key: "password"},
					}},
				}
			}
			checkErr(t, RayClusterSpec(&rc.Spec, rc.Annotations), tt.want)
		})
	}
}
