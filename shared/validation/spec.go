package validation

import (
	"fmt"
	"sort"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rayfleet/rayfleet/shared/rayspec"
)

// Field paths the rules report against.
var (
	specPath          = field.NewPath("spec")
	headPath          = specPath.Child("headGroupSpec")
	workersPath       = specPath.Child("workerGroupSpecs")
	headContainerPath = headPath.Child("template", "spec", "containers").Index(0)
)

// rayStartResourceParams are the rayStartParams keys that declare a node's Ray resources; the
// group's resources field declares the same thing, so only one of the two may be used.
var rayStartResourceParams = []string{"num-cpus", "num-gpus", "memory", "resources"}

// specCheck is one family of spec rules; RayClusterSpec runs them in KubeRay's order.
type specCheck func(spec *rayv1.RayClusterSpec, annotations map[string]string) error

// RayClusterSpec checks a RayCluster spec (and the annotations that change its meaning) against
// every rule KubeRay v1.6.2 enforces before reconciling, plus the unique worker group names that
// KubeRay's webhook enforces, no negative replicas or numOfHosts, and the limits on worker
// groups and worker Pods (MaxWorkerGroups, MaxWorkerPods). It returns the first rule that fails,
// in KubeRay's order: head group, worker groups, GCS fault tolerance, Redis username, autoscaler,
// authentication.
//
// KubeRay also rejects suspended worker groups when its RayJobDeletionPolicy feature gate is off;
// the gate is on by default in v1.6 and the spoke has no such gate, so that rule is not here.
func RayClusterSpec(spec *rayv1.RayClusterSpec, annotations map[string]string) error {
	checks := []specCheck{headGroup, workerGroups, gcsFaultTolerance, redisUsername, autoscaler, authOptions}
	for _, check := range checks {
		if err := check(spec, annotations); err != nil {
			return err
		}
	}
	return nil
}

// rayGroup is what the head and worker group rules have in common.
type rayGroup struct {
	desc           string // "head group" or `worker group "name"`, for messages
	path           *field.Path
	rayStartParams map[string]string
	resources      map[string]string
	labels         map[string]string
}

func headGroup(spec *rayv1.RayClusterSpec, _ map[string]string) error {
	head := &spec.HeadGroupSpec
	if len(head.Template.Spec.Containers) == 0 {
		return field.Required(headPath.Child("template", "spec", "containers"),
			"the head group needs at least one container; the first one runs Ray")
	}
	return groupRayParams(rayGroup{
		desc: "head group", path: headPath,
		rayStartParams: head.RayStartParams, resources: head.Resources, labels: head.Labels,
	})
}

func workerGroups(spec *rayv1.RayClusterSpec, _ map[string]string) error {
	if err := workerGroupCount(spec); err != nil {
		return err
	}
	autoscaling := rayspec.Autoscaling(spec)
	firstIndex := map[string]int{}
	for i := range spec.WorkerGroupSpecs {
		g := &spec.WorkerGroupSpecs[i]
		path := workersPath.Index(i)
		if first, dup := firstIndex[g.GroupName]; dup {
			err := field.Duplicate(path.Child("groupName"), g.GroupName)
			err.Detail = fmt.Sprintf("worker group names must be unique; %s also uses it", workersPath.Index(first))
			return err
		}
		firstIndex[g.GroupName] = i
		if err := workerGroup(spec, g, path, autoscaling); err != nil {
			return err
		}
	}
	return totalPodCount(spec)
}

func workerGroup(spec *rayv1.RayClusterSpec, g *rayv1.WorkerGroupSpec, path *field.Path, autoscaling bool) error {
	desc := fmt.Sprintf("worker group %q", g.GroupName)
	if len(g.Template.Spec.Containers) == 0 {
		return field.Required(path.Child("template", "spec", "containers"),
			desc+" needs at least one container; the first one runs Ray")
	}
	if err := replicaBounds(g, path, desc, autoscaling); err != nil {
		return err
	}
	if err := groupPodCount(g, path, desc); err != nil {
		return err
	}
	err := groupRayParams(rayGroup{
		desc: desc, path: path,
		rayStartParams: g.RayStartParams, resources: g.Resources, labels: g.Labels,
	})
	if err != nil {
		return err
	}
	return workerIdleTimeout(spec, g, path, desc)
}

// replicaBounds checks minReplicas and maxReplicas, and that no count is negative. Replicas
// outside the bounds is clamped, not rejected, as KubeRay does; a negative replicas or
// numOfHosts, which KubeRay quietly clamps or replaces, is refused, since it can only be a
// mistake. Without the autoscaler both bounds must be given, because nothing else would ever
// move the group between them.
func replicaBounds(g *rayv1.WorkerGroupSpec, path *field.Path, desc string, autoscaling bool) error {
	minPath, maxPath := path.Child("minReplicas"), path.Child("maxReplicas")
	if !autoscaling && (g.MinReplicas == nil || g.MaxReplicas == nil) {
		missing := minPath
		if g.MinReplicas != nil {
			missing = maxPath
		}
		return field.Required(missing, desc+" must set both minReplicas and maxReplicas when autoscaling is disabled")
	}
	if g.MinReplicas != nil && *g.MinReplicas < 0 {
		return field.Invalid(minPath, *g.MinReplicas, desc+": must not be negative")
	}
	if g.MaxReplicas != nil && *g.MaxReplicas < 0 {
		return field.Invalid(maxPath, *g.MaxReplicas, desc+": must not be negative")
	}
	if g.MinReplicas != nil && g.MaxReplicas != nil && *g.MinReplicas > *g.MaxReplicas {
		return field.Invalid(minPath, *g.MinReplicas,
			fmt.Sprintf("%s: must not be greater than maxReplicas (%d)", desc, *g.MaxReplicas))
	}
	if g.Replicas != nil && *g.Replicas < 0 {
		return field.Invalid(path.Child("replicas"), *g.Replicas, desc+": must not be negative")
	}
	if g.NumOfHosts < 0 {
		return field.Invalid(path.Child("numOfHosts"), g.NumOfHosts, desc+": must not be negative")
	}
	return nil
}

// groupRayParams checks that Ray resources are declared in one place only and that the group's
// Ray node labels are declared in the labels field with Kubernetes label syntax (they are also
// put on the group's Pods).
func groupRayParams(g rayGroup) error {
	var inParams []string
	for _, key := range rayStartResourceParams {
		if g.rayStartParams[key] != "" {
			inParams = append(inParams, key)
		}
	}
	if len(inParams) > 0 && len(g.resources) > 0 {
		return field.Invalid(g.path.Child("resources"), g.resources, fmt.Sprintf(
			"%s: must not be set together with rayStartParams %s; declare Ray resources in one place only",
			g.desc, strings.Join(inParams, ", ")))
	}
	if v, ok := g.rayStartParams["labels"]; ok {
		return field.Invalid(g.path.Child("rayStartParams").Key("labels"), v,
			g.desc+": not supported; use the group's labels field instead")
	}
	return labelSyntax(g)
}

// labelSyntax reports every bad label key and value of a group, in key order.
func labelSyntax(g rayGroup) error {
	keys := make([]string, 0, len(g.labels))
	for k := range g.labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs field.ErrorList
	labelsPath := g.path.Child("labels")
	for _, k := range keys {
		if msgs := k8svalidation.IsQualifiedName(k); len(msgs) > 0 {
			errs = append(errs, field.Invalid(labelsPath, k, g.desc+": invalid label key: "+joinMessages(msgs)))
		}
		if msgs := k8svalidation.IsValidLabelValue(g.labels[k]); len(msgs) > 0 {
			errs = append(errs, field.Invalid(labelsPath.Key(k), g.labels[k], g.desc+": invalid label value: "+joinMessages(msgs)))
		}
	}
	return errs.ToAggregate()
}

func joinMessages(msgs []string) string { return strings.Join(msgs, "; ") }

// envVar finds an environment variable by name.
func envVar(env []corev1.EnvVar, name string) (corev1.EnvVar, bool) {
	for _, e := range env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// headEnv is the environment of the head's Ray container; headGroup has already made sure it exists.
func headEnv(spec *rayv1.RayClusterSpec) []corev1.EnvVar {
	return spec.HeadGroupSpec.Template.Spec.Containers[0].Env
}

func headEnvPath(name string) *field.Path { return headContainerPath.Child("env").Key(name) }

func annotationPath(key string) *field.Path { return field.NewPath("metadata", "annotations").Key(key) }
