package validation

import (
	"strconv"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// envAutoscalerV2 is the head environment variable that selected autoscaler v2 before
// spec.autoscalerOptions.version existed.
const envAutoscalerV2 = "RAY_enable_autoscaler_v2"

// v2EnvOn reports whether the head's legacy env var turns autoscaler v2 on.
func v2EnvOn(spec *rayv1.RayClusterSpec) (string, bool) {
	e, ok := envVar(headEnv(spec), envAutoscalerV2)
	return e.Value, ok && (e.Value == "1" || e.Value == "true")
}

// workerIdleTimeout checks a group's idleTimeoutSeconds, which only autoscaler v2 reads.
func workerIdleTimeout(spec *rayv1.RayClusterSpec, g *rayv1.WorkerGroupSpec, path *field.Path, desc string) error {
	if g.IdleTimeoutSeconds == nil {
		return nil
	}
	timeout := *g.IdleTimeoutSeconds
	if timeout < 0 {
		return field.Invalid(path.Child("idleTimeoutSeconds"), timeout, desc+": must not be negative")
	}
	if _, on := v2EnvOn(spec); rayspec.AutoscalerV2(spec) || on {
		return nil
	}
	return field.Invalid(path.Child("idleTimeoutSeconds"), timeout, desc+
		": only autoscaler v2 reads it; set spec.autoscalerOptions.version to v2 (or the head's "+envAutoscalerV2+" env var to \"true\")")
}

// autoscaler checks the settings that only make sense with (or without) the in-tree autoscaler.
func autoscaler(spec *rayv1.RayClusterSpec, _ map[string]string) error {
	if !rayspec.Autoscaling(spec) {
		if v, on := v2EnvOn(spec); on {
			return field.Invalid(headEnvPath(envAutoscalerV2), v,
				"autoscaler v2 needs spec.enableInTreeAutoscaling: true")
		}
	} else if err := autoscalerEnabled(spec); err != nil {
		return err
	}
	if spec.AutoscalerOptions != nil && spec.AutoscalerOptions.IdleTimeoutSeconds != nil {
		if v := *spec.AutoscalerOptions.IdleTimeoutSeconds; v < 0 {
			return field.Invalid(specPath.Child("autoscalerOptions", "idleTimeoutSeconds"), v, "must not be negative")
		}
	}
	return nil
}

func autoscalerEnabled(spec *rayv1.RayClusterSpec) error {
	// The autoscaler would fight a suspended group by scaling it back up.
	for i, g := range spec.WorkerGroupSpecs {
		if ptr.Deref(g.Suspend, false) {
			return field.Invalid(workersPath.Index(i).Child("suspend"), true,
				"worker group "+strconv.Quote(g.GroupName)+" cannot be suspended while the autoscaler is enabled")
		}
	}
	if spec.AutoscalerOptions != nil && spec.AutoscalerOptions.Version != nil {
		if e, ok := envVar(headEnv(spec), envAutoscalerV2); ok {
			return field.Invalid(headEnvPath(envAutoscalerV2), e.Value,
				"must not be set together with spec.autoscalerOptions.version; use the version field only")
		}
	}
	if !rayspec.AutoscalerV2(spec) {
		return nil
	}
	// Autoscaler v2 replaces failed nodes itself; a kubelet restart would hide the failure from it.
	if err := neverRestart(spec.HeadGroupSpec.Template.Spec.RestartPolicy, headPath, "head group"); err != nil {
		return err
	}
	for i, g := range spec.WorkerGroupSpecs {
		if err := neverRestart(g.Template.Spec.RestartPolicy, workersPath.Index(i), "worker group "+strconv.Quote(g.GroupName)); err != nil {
			return err
		}
	}
	return nil
}

func neverRestart(policy corev1.RestartPolicy, groupPath *field.Path, desc string) error {
	if policy == "" || policy == corev1.RestartPolicyNever {
		return nil
	}
	return field.Invalid(groupPath.Child("template", "spec", "restartPolicy"), string(policy),
		desc+": must be Never or unset when using autoscaler v2")
}
