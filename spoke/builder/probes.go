package builder

import (
	"fmt"
	"strconv"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/version"
)

// Probe settings KubeRay uses. Head probes get a longer timeout because they check two endpoints.
const (
	livenessInitialDelay     = 30
	livenessTimeout          = 2
	headLivenessTimeout      = 5
	livenessPeriod           = 5
	livenessSuccess          = 1
	livenessFailure          = 120
	readinessInitialDelay    = 10
	readinessTimeout         = 2
	headReadinessTimeout     = 5
	readinessPeriod          = 5
	readinessSuccess         = 1
	readinessFailure         = 10
	serveReadinessFailure    = 1
	rayletHealthPath         = "api/local_raylet_healthz"
	gcsHealthPath            = "api/gcs_healthz"
	serveProxyHealthPath     = "-/healthz"
	unifiedHealthPath        = "/api/healthz"
	servePortName            = "serve"
	unifiedHealthMinVersion  = "2.53.0"
	wgetHealthCommandPattern = "wget --tries 1 -T %d -q -O- http://localhost:%d/%s | grep success"
)

// Timeouts KubeRay passes to wget. They reuse other probe constants (the GCS check waits up to
// the readiness failure threshold, the serve check up to the readiness initial delay); kept as-is
// so the probes behave exactly as KubeRay's.
const (
	rayletCheckTimeout = readinessTimeout
	gcsCheckTimeout    = readinessFailure
	serveCheckTimeout  = readinessInitialDelay
)

// supportsUnifiedHealthCheck reports whether the Ray version serves /api/healthz on the dashboard
// agent, which lets the probes be plain HTTP instead of exec'ing wget in the image.
func supportsUnifiedHealthCheck(rayVersion string) bool {
	v, err := version.ParseGeneric(rayVersion)
	if err != nil {
		return false
	}
	return v.AtLeast(version.MustParseGeneric(unifiedHealthMinVersion))
}

func paramPortOr(params map[string]string, key string, def int32) int32 {
	if s, ok := params[key]; ok {
		if p, err := strconv.ParseInt(s, 10, 32); err == nil {
			return int32(p)
		}
	}
	return def
}

func wgetCheck(timeout int, port int32, path string) string {
	return fmt.Sprintf(wgetHealthCommandPattern, timeout, port, path)
}

func execProbe(commands []string) *corev1.ProbeHandler {
	return &corev1.ProbeHandler{Exec: &corev1.ExecAction{
		Command: []string{"bash", "-c", strings.Join(commands, " && ")},
	}}
}

// setProbes gives the Ray container liveness and readiness probes unless the user set their own.
// Both check the raylet (and the GCS on the head); a RayService worker's readiness also checks its
// Serve proxy, so traffic only reaches workers that can serve it.
func setProbes(c *corev1.Container, nodeType rayv1.RayNodeType, creator creatorKind, params map[string]string, rayVersion string) {
	agentPort := paramPortOr(params, paramDashboardAgentListenPort, defaultDashboardAgentListenPort)
	checks := []string{wgetCheck(rayletCheckTimeout, agentPort, rayletHealthPath)}
	if nodeType == rayv1.HeadNode {
		dashPort := paramPortOr(params, paramDashboardPort, defaultDashboardPort)
		checks = append(checks, wgetCheck(gcsCheckTimeout, dashPort, gcsHealthPath))
	}
	handler := execProbe(checks)
	if supportsUnifiedHealthCheck(rayVersion) {
		handler = &corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: unifiedHealthPath,
			Port: intstr.FromInt32(agentPort),
		}}
	}
	isHead := nodeType == rayv1.HeadNode

	if c.LivenessProbe == nil {
		c.LivenessProbe = &corev1.Probe{
			ProbeHandler:        *handler.DeepCopy(),
			InitialDelaySeconds: livenessInitialDelay,
			TimeoutSeconds:      pick(isHead, headLivenessTimeout, livenessTimeout),
			PeriodSeconds:       livenessPeriod,
			SuccessThreshold:    livenessSuccess,
			FailureThreshold:    livenessFailure,
		}
	}
	if c.ReadinessProbe != nil {
		return
	}
	c.ReadinessProbe = &corev1.Probe{
		ProbeHandler:        *handler.DeepCopy(),
		InitialDelaySeconds: readinessInitialDelay,
		TimeoutSeconds:      pick(isHead, headReadinessTimeout, readinessTimeout),
		PeriodSeconds:       readinessPeriod,
		SuccessThreshold:    readinessSuccess,
		FailureThreshold:    readinessFailure,
	}
	// The head's Serve proxy is checked by the RayService reconciler instead (it flips the head's
	// ray.io/serve label), so a slow proxy does not make the whole head unready.
	if creator == creatorRayService && nodeType == rayv1.WorkerNode {
		servePort := containerPort(c, servePortName, defaultServePort)
		checks = append(checks, wgetCheck(serveCheckTimeout, servePort, serveProxyHealthPath))
		c.ReadinessProbe.ProbeHandler = *execProbe(checks)
		c.ReadinessProbe.FailureThreshold = serveReadinessFailure
	}
}

func pick(cond bool, a, b int32) int32 {
	if cond {
		return a
	}
	return b
}

// containerPort is the port named name on the container, else def.
func containerPort(c *corev1.Container, name string, def int32) int32 {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	return def
}
