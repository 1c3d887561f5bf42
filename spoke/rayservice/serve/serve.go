package serve

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/validation"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
)

// DefaultAppName is the name KubeRay gives an application the dashboard reports unnamed.
const DefaultAppName = "default"

// targetCapacityKey is the Serve config's top-level target_capacity field.
const targetCapacityKey = "target_capacity"

// Reasons NeedsSubmit gives, for the reconciler's log.
const (
	reasonNothingSubmitted = "nothing has been submitted to this cluster"
	reasonNoApplications   = "the cluster reports no Serve application (its head may have restarted without GCS fault tolerance)"
	reasonConfigChanged    = "serveConfigV2 differs from the config submitted"
	reasonUpToDate         = "serveConfigV2 is the config submitted"
	reasonNoAppsDeclared   = "serveConfigV2 declares no application, so none is expected"
)

// NeedsSubmit decides whether serveConfigV2 (desired) is submitted to a cluster, as KubeRay
// does: when nothing was submitted to it (by this process), when it reports no application
// (the head restarted and lost them), or when the config changed since the last submission.
// Unlike KubeRay, a config that declares no application is not submitted again and again
// because the cluster reports none. The reason is for logs.
func NeedsSubmit(last Submitted, submitted bool, desired string, numApps int) (bool, string) {
	switch {
	case !submitted:
		return true, reasonNothingSubmitted
	case numApps == 0 && last.Config == desired && !declaresApplications(desired):
		return false, reasonNoAppsDeclared
	case numApps == 0:
		return true, reasonNoApplications
	case last.Config != desired:
		return true, reasonConfigChanged
	default:
		return false, reasonUpToDate
	}
}

// declaresApplications reports whether a Serve config lists at least one application; an
// unreadable config counts as declaring some, so that it is submitted and the dashboard's
// answer reported.
func declaresApplications(serveConfigV2 string) bool {
	if err := checkSize(serveConfigV2); err != nil {
		return true
	}
	if blank(serveConfigV2) {
		return false
	}
	var cfg struct {
		Applications []any `json:"applications"`
	}
	if err := yaml.Unmarshal([]byte(serveConfigV2), &cfg); err != nil {
		return true
	}
	return len(cfg.Applications) > 0
}

// checkSize refuses a config over validation.MaxServeConfigV2Bytes before it is parsed. The
// reconciler validates every spec first, so this only matters if a caller forgets to: parsing
// is then still bounded.
func checkSize(serveConfigV2 string) error {
	if n := len(serveConfigV2); n > validation.MaxServeConfigV2Bytes {
		return fmt.Errorf("serveConfigV2 is %d bytes, over the %d a Serve config may have", n, validation.MaxServeConfigV2Bytes)
	}
	return nil
}

// blank reports whether a config holds only white space, which validation takes for no config
// at all; the YAML parser would refuse one with a tab in it.
func blank(serveConfigV2 string) bool { return strings.TrimSpace(serveConfigV2) == "" }

// ConfigJSON turns serveConfigV2 (YAML) into the JSON body of a submission, with
// target_capacity set when targetCapacity is not nil. A config over
// validation.MaxServeConfigV2Bytes is an error, and is not parsed; a blank one is an empty
// config, as validation has it.
func ConfigJSON(serveConfigV2 string, targetCapacity *int32) ([]byte, error) {
	if err := checkSize(serveConfigV2); err != nil {
		return nil, err
	}
	if blank(serveConfigV2) {
		serveConfigV2 = ""
	}
	js, err := yaml.YAMLToJSON([]byte(serveConfigV2))
	if err != nil {
		return nil, fmt.Errorf("parse serveConfigV2: %w", err)
	}
	// Numbers stay as written: float64 would round large integers.
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var cfg map[string]any
	if err = dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("serveConfigV2 is not a YAML mapping: %w", err)
	}
	if cfg == nil {
		cfg = map[string]any{}
	}
	if targetCapacity != nil {
		cfg[targetCapacityKey] = *targetCapacity
	}
	out, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode serveConfigV2 as JSON: %w", err)
	}
	return out, nil
}

// Applications turns the dashboard's Serve details into the RayService's application statuses
// and tells whether the cluster is ready to take traffic: at least one application, and every
// one RUNNING. Switching traffic to a cluster with an application still deploying would drop
// its requests.
func Applications(details *dashboard.ServeDetails) (map[string]rayv1.AppStatus, bool) {
	if details == nil || len(details.Applications) == 0 {
		return map[string]rayv1.AppStatus{}, false
	}
	apps := make(map[string]rayv1.AppStatus, len(details.Applications))
	ready := true
	for name, app := range details.Applications {
		if name == "" {
			name = DefaultAppName
		}
		st := rayv1.AppStatus{Status: app.Status, Message: app.Message}
		if len(app.Deployments) > 0 {
			st.Deployments = make(map[string]rayv1.ServeDeploymentStatus, len(app.Deployments))
			for dn, d := range app.Deployments {
				st.Deployments[dn] = rayv1.ServeDeploymentStatus{Status: d.Status, Message: d.Message}
			}
		}
		if app.Status != dashboard.AppStatusRunning {
			ready = false
		}
		apps[name] = st
	}
	return apps, ready
}

// MaxFailureMessage bounds the part of a failing application's message that FailingApp
// carries into events and condition messages; Ray's messages can be whole tracebacks, which the
// application's status keeps.
const MaxFailureMessage = 256

// failureElision joins the first and the last line of a message too long to carry whole.
const failureElision = " … "

// FailingApp is an application that failed: DEPLOY_FAILED or UNHEALTHY.
type FailingApp struct {
	// Name, Status and Message are the application's, the message shortened by
	// failureSummary.
	Name, Status, Message string
}

// Failing returns the applications of apps that are DEPLOY_FAILED or UNHEALTHY, by name. Those
// still NOT_STARTED or DEPLOYING are on their way and are not failures.
func Failing(apps map[string]rayv1.AppStatus) []FailingApp {
	var out []FailingApp
	for name, app := range apps {
		if app.Status != dashboard.AppStatusDeployFailed && app.Status != dashboard.AppStatusUnhealthy {
			continue
		}
		out = append(out, FailingApp{Name: name, Status: app.Status, Message: failureSummary(app.Message)})
	}
	slices.SortFunc(out, func(a, b FailingApp) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// failureSummary fits a failing application's message into MaxFailureMessage bytes. Ray reports
// a failed deploy as a first line naming the application, a traceback, and last the exception
// that says what went wrong ("RuntimeError: ..."): a message too long to carry whole keeps its
// first and its last line, the last one whole if it can, rather than the start of the traceback.
func failureSummary(msg string) string {
	if len(msg) <= MaxFailureMessage {
		return msg
	}
	var lines []string
	for line := range strings.Lines(msg) {
		if line = strings.TrimSpace(line); line != "" {
			lines = append(lines, line)
		}
	}
	if len(lines) < 2 {
		return conditions.TruncateTo(strings.TrimSpace(msg), MaxFailureMessage)
	}
	last := conditions.TruncateTo(lines[len(lines)-1], MaxFailureMessage)
	room := MaxFailureMessage - len(last) - len(failureElision)
	if room <= 0 {
		return last
	}
	return conditions.TruncateTo(lines[0], room) + failureElision + last
}
