package builder

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// rayStartParams keys the builder reads or writes.
const (
	paramPort                     = "port"
	paramAddress                  = "address"
	paramBlock                    = "block"
	paramDashboardHost            = "dashboard-host"
	paramDashboardPort            = "dashboard-port"
	paramDashboardAgentListenPort = "dashboard-agent-listen-port"
	paramMetricsExportPort        = "metrics-export-port"
	paramNumCPUs                  = "num-cpus"
	paramNumGPUs                  = "num-gpus"
	paramMemory                   = "memory"
	paramResources                = "resources"
	paramLabels                   = "labels"
	paramNoMonitor                = "no-monitor"
	paramPlasmaDirectory          = "plasma-directory"
	paramRedisPassword            = "redis-password"
	paramRedisUsername            = "redis-username"
)

// Default ports of a Ray node.
const (
	defaultGCSPort                  = 6379
	defaultDashboardPort            = 8265
	defaultClientPort               = 10001
	defaultServePort                = 8000
	defaultMetricsPort              = 8080
	defaultDashboardAgentListenPort = 52365
)

// ulimitCommand raises the open-file limit of `ray start` and its children; Ray needs far more
// descriptors than container runtimes allow by default.
const ulimitCommand = "ulimit -n 65536"

// acceleratorRayResources maps container resources to the Ray custom resource that exposes them.
var acceleratorRayResources = map[string]string{
	"aws.amazon.com/neuroncore": "neuron_cores",
	"google.com/tpu":            "TPU",
}

// switchParamsWithValue are the rayStartParams whose "true"/"false" is a value, not a bare flag.
var switchParamsWithValue = []string{"log-color", "include-dashboard"}

var migGPUResource = regexp.MustCompile(`nvidia\.com/mig-\d+g\.\d+gb$`)

// isGPUResource reports whether a resource name counts as GPUs for Ray: any name ending in "gpu",
// or an NVIDIA MIG slice.
func isGPUResource(name string) bool {
	return strings.HasSuffix(name, "gpu") || migGPUResource.MatchString(name)
}

// headPort is the GCS port workers connect to: the head's "port" param, else 6379.
func headPort(rc *rayv1.RayCluster) string {
	if p, ok := rc.Spec.HeadGroupSpec.RayStartParams[paramPort]; ok {
		return p
	}
	return strconv.Itoa(defaultGCSPort)
}

// applyGroupResources lets the group's top-level `resources` override the matching rayStartParams:
// cpu, memory and GPUs become their flags, anything else goes into the --resources JSON, which it
// replaces. Unparsable quantities are skipped, as KubeRay does.
func applyGroupResources(params, groupResources map[string]string) {
	custom := map[string]float64{}
	for _, name := range slices.Sorted(maps.Keys(groupResources)) {
		q, err := resource.ParseQuantity(groupResources[name])
		if err != nil {
			continue
		}
		switch lower := strings.ToLower(name); {
		case lower == string(corev1.ResourceCPU):
			params[paramNumCPUs] = strconv.FormatInt(q.Value(), 10)
		case lower == string(corev1.ResourceMemory):
			params[paramMemory] = strconv.FormatInt(q.Value(), 10)
		case isGPUResource(lower):
			params[paramNumGPUs] = strconv.FormatInt(q.Value(), 10)
		default:
			custom[name] = q.AsApproximateFloat64()
		}
	}
	if len(custom) > 0 {
		if js, err := json.Marshal(custom); err == nil {
			params[paramResources] = quoteResources(js)
		}
	}
}

// applyGroupLabels replaces --labels with the group's top-level Ray node labels, sorted by key.
func applyGroupLabels(params, groupLabels map[string]string) {
	if len(groupLabels) == 0 {
		return
	}
	pairs := make([]string, 0, len(groupLabels))
	for _, k := range slices.Sorted(maps.Keys(groupLabels)) {
		pairs = append(pairs, k+"="+groupLabels[k])
	}
	params[paramLabels] = strings.Join(pairs, ",")
}

// completeParams adds the flags KubeRay always passes: the head address for workers, the dashboard
// bound to all interfaces on the head, the metrics and dashboard-agent ports the Services and
// probes rely on, and --block so the container lives as long as Ray does.
func completeParams(params map[string]string, nodeType rayv1.RayNodeType, port, fqdn string) {
	setDefault := func(k, v string) {
		if _, ok := params[k]; !ok {
			params[k] = v
		}
	}
	switch nodeType {
	case rayv1.WorkerNode:
		setDefault(paramAddress, fqdn+":"+port)
	case rayv1.HeadNode:
		setDefault(paramDashboardHost, "0.0.0.0")
	}
	setDefault(paramMetricsExportPort, strconv.Itoa(defaultMetricsPort))
	params[paramBlock] = "true"
	setDefault(paramDashboardAgentListenPort, strconv.Itoa(defaultDashboardAgentListenPort))
}

// addContainerResources derives --num-cpus (CPU limit, else request, rounded up), --memory (memory
// limit) and the accelerator flags from the Ray container, unless the params already set them.
func addContainerResources(params map[string]string, res corev1.ResourceRequirements) {
	if _, ok := params[paramNumCPUs]; !ok {
		if cpu := res.Limits[corev1.ResourceCPU]; !cpu.IsZero() {
			params[paramNumCPUs] = strconv.FormatInt(cpu.Value(), 10)
		} else if cpu := res.Requests[corev1.ResourceCPU]; !cpu.IsZero() {
			params[paramNumCPUs] = strconv.FormatInt(cpu.Value(), 10)
		}
	}
	if _, ok := params[paramMemory]; !ok {
		if mem := res.Limits[corev1.ResourceMemory]; !mem.IsZero() {
			params[paramMemory] = strconv.FormatInt(mem.Value(), 10)
		}
	}
	addAccelerators(params, res.Limits)
}

// addAccelerators sets --num-gpus from the first GPU limit and puts the first known accelerator
// (TPU, Neuron cores) into --resources, unless the params already declare one. When --resources
// is not valid JSON KubeRay gives up on accelerators altogether, GPUs included; so does this.
func addAccelerators(params map[string]string, limits corev1.ResourceList) {
	if len(limits) == 0 {
		return
	}
	custom, err := parseResourcesParam(params)
	if err != nil {
		return
	}
	acceleratorDeclared := false
	for _, rayName := range acceleratorRayResources {
		if _, ok := custom[rayName]; ok {
			acceleratorDeclared = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		q := limits[name]
		if q.IsZero() {
			continue
		}
		if _, ok := params[paramNumGPUs]; !ok && isGPUResource(string(name)) {
			params[paramNumGPUs] = strconv.FormatInt(q.Value(), 10)
		}
		rayName, isAccelerator := acceleratorRayResources[string(name)]
		if acceleratorDeclared || !isAccelerator {
			continue
		}
		acceleratorDeclared = true
		if _, ok := custom[rayName]; ok {
			continue
		}
		custom[rayName] = q.AsApproximateFloat64()
		js, err := json.Marshal(custom)
		if err != nil {
			return
		}
		params[paramResources] = quoteResources(js)
	}
}

// parseResourcesParam decodes the --resources JSON, tolerating the shell quotes users wrap it in.
func parseResourcesParam(params map[string]string) (map[string]float64, error) {
	custom := map[string]float64{}
	raw, ok := params[paramResources]
	if !ok {
		return custom, nil
	}
	if err := json.Unmarshal([]byte(strings.Trim(raw, "'\"` ")), &custom); err != nil {
		return nil, fmt.Errorf("parse rayStartParams resources %q: %w", raw, err)
	}
	return custom, nil
}

// quoteResources single-quotes the JSON so bash passes it to `ray start` as one word.
func quoteResources(js []byte) string {
	return "'" + string(js) + "'"
}

// rayStartCommand renders `ray start` for the node type with the params as flags.
func rayStartCommand(nodeType rayv1.RayNodeType, params map[string]string) string {
	if nodeType == rayv1.HeadNode {
		return "ray start --head " + renderParams(params)
	}
	return "ray start " + renderParams(params)
}

// renderParams turns params into flags in key order. A "true" value becomes a bare switch and a
// "false" value drops the flag, except for the flags that take true/false as a value. The spacing
// (" --k=v " per flag) is KubeRay's, so KUBERAY_GEN_RAY_START_CMD reads the same.
func renderParams(params map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(params)) {
		v := params[k]
		lower := strings.ToLower(v)
		if (lower == "true" || lower == "false") && !slices.Contains(switchParamsWithValue, k) {
			if lower == "true" {
				fmt.Fprintf(&b, " --%s ", k)
			}
			continue
		}
		fmt.Fprintf(&b, " --%s=%s ", k, v)
	}
	return b.String()
}

// joinCommand flattens a container command or args the way KubeRay does before looking for
// "ray start" in it: every element surrounded by single spaces.
func joinCommand(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, " %s ", p)
	}
	return b.String()
}

// setRayContainerCommand replaces the Ray container's command with the generated `ray start`,
// keeping any user command in front of it, unless the user opted out (overwrite annotation) or
// already runs `ray start` themselves.
func setRayContainerCommand(c *corev1.Container, startCmd string, overwrite bool, opts Options) {
	existing := joinCommand(c.Command) + joinCommand(c.Args)
	if overwrite || strings.Contains(existing, "ray start") {
		return
	}
	generated := ulimitCommand + "; " + startCmd
	script := generated
	if existing != "" {
		// `ray start --block` never returns, so the user's command has to run first.
		script = existing + " && " + generated
	}
	c.Command = opts.shellCommand()
	c.Args = []string{script}
}
