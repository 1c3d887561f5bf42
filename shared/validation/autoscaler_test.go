package validation

import (
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestRayClusterSpecAutoscaler(t *testing.T) {
	const envPath = "spec.headGroupSpec.template.spec.containers[0].env[RAY_enable_autoscaler_v2]"
	setEnv := func(value string) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_enable_autoscaler_v2", Value: value}}
		}
	}
	autoscaling := func(rc *rayv1.RayCluster) { rc.Spec.EnableInTreeAutoscaling = ptr.To(true) }
	v2 := func(rc *rayv1.RayCluster) {
		autoscaling(rc)
		rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
	}
	all := func(fs ...func(rc *rayv1.RayCluster)) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) {
			for _, f := range fs {
				f(rc)
			}
		}
	}
	suspend := func(rc *rayv1.RayCluster) { firstWorker(rc).Suspend = ptr.To(true) }
	headRestart := func(p corev1.RestartPolicy) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) { rc.Spec.HeadGroupSpec.Template.Spec.RestartPolicy = p }
	}
	workerRestart := func(p corev1.RestartPolicy) func(rc *rayv1.RayCluster) {
		return func(rc *rayv1.RayCluster) { firstWorker(rc).Template.Spec.RestartPolicy = p }
	}
	runSpecCases(t, []specCase{
		{name: "autoscaler v1", mutate: autoscaling},
		{name: "autoscaler v2 with Never and unset restart policies", mutate: all(v2, headRestart(corev1.RestartPolicyNever))},
		{name: "suspended group without autoscaler", mutate: suspend},
		{
			name:   "suspended group with autoscaler",
			mutate: all(autoscaling, suspend),
			want:   `spec.workerGroupSpecs[0].suspend: Invalid value: true: worker group "g" cannot be suspended while the autoscaler is enabled`,
		},
		{name: "v2 env var '1' without autoscaler", mutate: setEnv("1"), want: envPath + `: Invalid value: "1": autoscaler v2 needs spec.enableInTreeAutoscaling: true`},
		{name: "v2 env var 'true' without autoscaler", mutate: setEnv("true"), want: envPath + `: Invalid value: "true": autoscaler v2 needs spec.enableInTreeAutoscaling: true`},
		{name: "v2 env var 'false' without autoscaler", mutate: setEnv("false")},
		{name: "v2 env var 'True' is not 'true'", mutate: setEnv("True")},
		{name: "v2 env var with autoscaler but no version", mutate: all(autoscaling, setEnv("true"))},
		{
			name:   "v2 env var and autoscalerOptions.version",
			mutate: all(v2, setEnv("true")),
			want:   envPath + `: Invalid value: "true": must not be set together with spec.autoscalerOptions.version; use the version field only`,
		},
		{
			name: "env var conflicts with version v1 as well",
			mutate: all(autoscaling, setEnv("0"), func(rc *rayv1.RayCluster) {
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV1)}
			}),
			want: envPath + `: Invalid value: "0": must not be set together with spec.autoscalerOptions.version; use the version field only`,
		},
		{
			name:   "v2 with head restartPolicy Always",
			mutate: all(v2, headRestart(corev1.RestartPolicyAlways)),
			want:   `spec.headGroupSpec.template.spec.restartPolicy: Invalid value: "Always": head group: must be Never or unset when using autoscaler v2`,
		},
		{
			name:   "v2 with worker restartPolicy OnFailure",
			mutate: all(v2, workerRestart(corev1.RestartPolicyOnFailure)),
			want:   `spec.workerGroupSpecs[0].template.spec.restartPolicy: Invalid value: "OnFailure": worker group "g": must be Never or unset when using autoscaler v2`,
		},
		{name: "v1 with restartPolicy Always", mutate: all(autoscaling, headRestart(corev1.RestartPolicyAlways))},
		{
			name:   "suspended group is reported before restart policy",
			mutate: all(v2, suspend, headRestart(corev1.RestartPolicyAlways)),
			want:   `spec.workerGroupSpecs[0].suspend: Invalid value: true: worker group "g" cannot be suspended while the autoscaler is enabled`,
		},
		{
			name: "negative autoscalerOptions.idleTimeoutSeconds",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{IdleTimeoutSeconds: ptr.To[int32](-1)}
			},
			want: "spec.autoscalerOptions.idleTimeoutSeconds: Invalid value: -1: must not be negative",
		},
		{
			name: "zero autoscalerOptions.idleTimeoutSeconds",
			mutate: all(autoscaling, func(rc *rayv1.RayCluster) {
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{IdleTimeoutSeconds: ptr.To[int32](0)}
			}),
		},
	})
}

func TestRayClusterSpecWorkerIdleTimeout(t *testing.T) {
	idle := func(v int32) func(rc *rayv1.RayCluster) *rayv1.WorkerGroupSpec {
		return func(rc *rayv1.RayCluster) *rayv1.WorkerGroupSpec {
			g := firstWorker(rc)
			g.IdleTimeoutSeconds = ptr.To(v)
			return g
		}
	}
	const needsV2 = `worker group "g": only autoscaler v2 reads it; set spec.autoscalerOptions.version to v2 ` +
		`(or the head's RAY_enable_autoscaler_v2 env var to "true")`
	runSpecCases(t, []specCase{
		{
			name: "v2 by version",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
				idle(60)(rc)
			},
		},
		{
			name: "v2 by env var",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.HeadGroupSpec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "RAY_enable_autoscaler_v2", Value: "1"}}
				idle(60)(rc)
			},
		},
		{
			name: "zero with v2",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV2)}
				idle(0)(rc)
			},
		},
		{
			name:   "negative",
			mutate: func(rc *rayv1.RayCluster) { idle(-5)(rc) },
			want:   `spec.workerGroupSpecs[0].idleTimeoutSeconds: Invalid value: -5: worker group "g": must not be negative`,
		},
		{
			name:   "without autoscaler v2",
			mutate: func(rc *rayv1.RayCluster) { idle(60)(rc) },
			want:   `spec.workerGroupSpecs[0].idleTimeoutSeconds: Invalid value: 60: ` + needsV2,
		},
		{
			name: "with autoscaler v1",
			mutate: func(rc *rayv1.RayCluster) {
				rc.Spec.EnableInTreeAutoscaling = ptr.To(true)
				rc.Spec.AutoscalerOptions = &rayv1.AutoscalerOptions{Version: ptr.To(rayv1.AutoscalerVersionV1)}
				idle(60)(rc)
			},
			want: `spec.workerGroupSpecs[0].idleTimeoutSeconds: Invalid value: 60: ` + needsV2,
		},
	})
}
