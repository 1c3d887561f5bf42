package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/spoke/builder"
)

// The file --config reads is KubeRay's operator configuration file, so that a platform team's
// file carries over unchanged.
const (
	configAPIVersion = "config.ray.io/v1alpha1"
	configKind       = "Configuration"
)

// operatorConfig is the part of KubeRay's operator Configuration the spoke honours: what goes
// into the Pods it builds. The rest of that type configures the process, which the spoke's own
// flags do (see refusedConfigFields).
type operatorConfig struct {
	metav1.TypeMeta `json:",inline"`

	// HeadSidecarContainers are appended to every head Pod.
	HeadSidecarContainers []corev1.Container `json:"headSidecarContainers,omitempty"`
	// WorkerSidecarContainers are appended to every worker Pod.
	WorkerSidecarContainers []corev1.Container `json:"workerSidecarContainers,omitempty"`
	// DefaultContainerEnvs are set on every Ray container that does not set them itself.
	DefaultContainerEnvs []corev1.EnvVar `json:"defaultContainerEnvs,omitempty"`
}

// refusedConfigFields are the fields of KubeRay's Configuration that the spoke does not read from
// the file, with where the spoke takes the setting instead. They are refused rather than ignored:
// KubeRay ignores its flags when --config is given, so a file that set them expects them to
// apply, and silently keeping the spoke's flag values instead would run a different operator.
var refusedConfigFields = map[string]string{
	"qps":                          "set --kube-api-qps",
	"burst":                        "set --kube-api-burst",
	"enableLeaderElection":         "set --leader-elect",
	"leaderElectionNamespace":      "set --leader-election-namespace",
	"metricsAddr":                  "set --metrics-bind-address",
	"enableMetrics":                "the spoke always serves metrics on --metrics-bind-address",
	"probeAddr":                    "set --health-probe-bind-address",
	"logStdoutEncoder":             "set --zap-encoder",
	"logFile":                      "the spoke logs to standard error only",
	"logFileEncoder":               "the spoke logs to standard error only",
	"watchNamespace":               "set --watch-namespace",
	"reconcileConcurrency":         "set --max-concurrent-reconciles",
	"batchScheduler":               "the spoke has no batch scheduler integration",
	"enableBatchScheduler":         "the spoke has no batch scheduler integration",
	"useKubernetesProxy":           "set --dashboard-address-template and --serve-proxy-address-template",
	"deleteRayJobAfterJobFinishes": "the spoke runs no RayJobs",
}

// loadConfig reads the configuration file at path into opts. An empty path leaves opts as they are.
func loadConfig(path string, opts *builder.Options) error {
	if path == "" {
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading --config: %w", err)
	}
	cfg, err := parseConfig(data)
	if err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	opts.HeadSidecars = cfg.HeadSidecarContainers
	opts.WorkerSidecars = cfg.WorkerSidecarContainers
	opts.DefaultContainerEnvs = cfg.DefaultContainerEnvs
	return nil
}

// parseConfig decodes and validates a configuration file. Decoding is strict: a misspelt field,
// at any depth, is an error rather than a setting that silently does nothing.
func parseConfig(data []byte) (operatorConfig, error) {
	var cfg operatorConfig
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		return cfg, fmt.Errorf("not YAML: %w", err)
	}
	var top map[string]json.RawMessage
	if err = json.Unmarshal(asJSON, &top); err != nil {
		return cfg, fmt.Errorf("not a %s object: %w", configKind, err)
	}
	if err = refuseUnhonoured(top); err != nil {
		return cfg, err
	}
	if err = yaml.UnmarshalStrict(data, &cfg); err != nil {
		return cfg, fmt.Errorf("decoding: %w", err)
	}
	if cfg.APIVersion != configAPIVersion || cfg.Kind != configKind {
		return cfg, fmt.Errorf("apiVersion %q and kind %q, want %s and %s", cfg.APIVersion, cfg.Kind, configAPIVersion, configKind)
	}
	return cfg, validateConfig(cfg)
}

// refuseUnhonoured names every field of top that KubeRay accepts and the spoke does not read.
func refuseUnhonoured(top map[string]json.RawMessage) error {
	var errs []error
	for name := range top {
		if hint, ok := refusedConfigFields[name]; ok {
			errs = append(errs, fmt.Errorf("field %q of KubeRay's Configuration is not read by the spoke: %s", name, hint))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// validateConfig refuses at start what would otherwise fail every Pod the spoke creates.
// KubeRay appends the containers unchecked and lets each Pod creation fail; the spoke checks
// the same rules the API server applies to them once, before reconciling anything.
func validateConfig(cfg operatorConfig) error {
	errs := validateSidecars("headSidecarContainers", cfg.HeadSidecarContainers, builder.AutoscalerContainerName)
	errs = append(errs, validateSidecars("workerSidecarContainers", cfg.WorkerSidecarContainers, builder.WaitGCSContainerName)...)
	seen := map[string]bool{}
	for i, e := range cfg.DefaultContainerEnvs {
		field := fmt.Sprintf("defaultContainerEnvs[%d]", i)
		switch {
		case e.Name == "" || strings.Contains(e.Name, "="):
			errs = append(errs, fmt.Errorf("%s: name %q must be non-empty and have no '='", field, e.Name))
		case seen[e.Name]:
			errs = append(errs, fmt.Errorf("%s: name %q is given twice", field, e.Name))
		}
		seen[e.Name] = true
	}
	return errors.Join(errs...)
}

// validateSidecars checks one list of sidecars: each has an image and a DNS label for a name,
// no two share a name, and none takes a name the spoke gives its own containers (reserved).
func validateSidecars(field string, cs []corev1.Container, reserved ...string) []error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range cs {
		at := fmt.Sprintf("%s[%d]", field, i)
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, fmt.Errorf("%s: name %q: %s", at, c.Name, msg))
		}
		if seen[c.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q is given twice", at, c.Name))
		}
		seen[c.Name] = true
		if slices.Contains(reserved, c.Name) {
			errs = append(errs, fmt.Errorf("%s: name %q is the spoke's own container", at, c.Name))
		}
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, fmt.Errorf("%s: image is required", at))
		}
	}
	return errs
}
