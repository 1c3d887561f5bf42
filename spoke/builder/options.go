// Package builder turns a RayCluster into the Kubernetes objects KubeRay v1.6.2 would create for
// it: head and worker Pods, Services, autoscaler RBAC, the dashboard Ingress, the auth Secret and
// the GCS fault-tolerance Redis cleanup Job. Every function here is pure: no API calls, no clock,
// and the RayCluster passed in is never modified.
// Of the repository it imports only shared/ (labels, rayspec): never hub/, the reconcilers or
// shared/testing.
package builder

import (
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// Operator environment variables KubeRay reads when it builds objects. The spoke reads the same
// names so that a KubeRay Deployment's environment keeps its meaning.
const (
	envClusterDomain            = "CLUSTER_DOMAIN"
	envProbesInjection          = "ENABLE_PROBES_INJECTION"
	envInitContainerInjection   = "ENABLE_INIT_CONTAINER_INJECTION"
	envLoginShell               = "ENABLE_LOGIN_SHELL"
	envDeterministicHeadPodName = "ENABLE_DETERMINISTIC_HEAD_POD_NAME"
	envHeadServiceClusterIP     = "ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE"
)

// defaultClusterDomain is the DNS suffix used for the head Service FQDN when CLUSTER_DOMAIN is unset.
const defaultClusterDomain = "cluster.local"

// Options carries every operator-level setting that changes what is built. Start from
// OptionsFromEnv or DefaultOptions: the zero value turns off the injections KubeRay enables by
// default.
type Options struct {
	// KubeRayVersion is written to ray.io/kuberay-version and the usage-stats tags.
	KubeRayVersion string
	// ClusterDomain is the DNS suffix of the head Service FQDN (CLUSTER_DOMAIN).
	ClusterDomain string
	// ProbesInjection adds liveness and readiness probes to Ray containers (ENABLE_PROBES_INJECTION).
	ProbesInjection bool
	// InitContainerInjection adds the wait-gcs-ready init container to workers (ENABLE_INIT_CONTAINER_INJECTION).
	InitContainerInjection bool
	// LoginShell runs generated commands through `bash -l` (ENABLE_LOGIN_SHELL).
	LoginShell bool
	// DeterministicHeadPodName names the head Pod `<cluster>-head` instead of generating a suffix
	// (ENABLE_DETERMINISTIC_HEAD_POD_NAME).
	DeterministicHeadPodName bool
	// HeadServiceClusterIP gives the head Service a cluster IP instead of making it headless
	// (ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE).
	HeadServiceClusterIP bool
	// MultiHostIndexing adds the replica index labels to worker Pods; KubeRay's RayMultiHostIndexing
	// feature gate, on by default in v1.6.2.
	MultiHostIndexing bool
	// DefaultContainerEnvs are added to every Ray container that does not already set them.
	DefaultContainerEnvs []corev1.EnvVar
	// HeadSidecars are appended to every head Pod.
	HeadSidecars []corev1.Container
	// WorkerSidecars are appended to every worker Pod.
	WorkerSidecars []corev1.Container
}

// DefaultOptions returns KubeRay's defaults, as if no operator environment variable were set.
func DefaultOptions() Options {
	return OptionsFromEnv(func(string) string { return "" })
}

// OptionsFromEnv reads KubeRay's operator environment variables through getenv (os.Getenv when
// nil). Values are compared case-insensitively, as KubeRay does.
func OptionsFromEnv(getenv func(string) string) Options {
	if getenv == nil {
		getenv = os.Getenv
	}
	isTrue := func(key string) bool { return strings.EqualFold(getenv(key), "true") }
	notFalse := func(key string) bool { return !strings.EqualFold(getenv(key), "false") }
	o := Options{
		KubeRayVersion:           labels.KubeRayVersionValue,
		ClusterDomain:            getenv(envClusterDomain),
		ProbesInjection:          notFalse(envProbesInjection),
		InitContainerInjection:   notFalse(envInitContainerInjection),
		LoginShell:               isTrue(envLoginShell),
		DeterministicHeadPodName: isTrue(envDeterministicHeadPodName),
		HeadServiceClusterIP:     isTrue(envHeadServiceClusterIP),
		MultiHostIndexing:        true,
	}
	return o.withDefaults()
}

// withDefaults fills the string settings a caller may have left empty.
func (o Options) withDefaults() Options {
	if o.KubeRayVersion == "" {
		o.KubeRayVersion = labels.KubeRayVersionValue
	}
	if o.ClusterDomain == "" {
		o.ClusterDomain = defaultClusterDomain
	}
	return o
}

// shellCommand is the command that runs a generated script: bash -c, plus -l when login shells
// are enabled (KubeRay dropped the login shell by default in v1.4).
func (o Options) shellCommand() []string {
	flags := "-c"
	if o.LoginShell {
		flags += "l"
	}
	return []string{"/bin/bash", flags, "--"}
}
