package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/shared/runningreplicas"
	"github.com/rayfleet/rayfleet/shared/validation"
)

// defaultServeApp is the name Ray gives an application whose config names none; the spoke
// reports it under that name.
const defaultServeApp = "default"

// maxShareCount bounds the counts RunningShareOf hands to RunningShare, whose int32 arithmetic
// (100 times a count, plus the full size) must not overflow. Larger sizes are scaled down.
const maxShareCount = math.MaxInt32 / 200

// CapacitySet is one colour's full set: what its copy runs at 100% of its capacity, as the
// RayService spec placed on it asks. Capacity percents are percents of it.
type CapacitySet struct {
	// Autoscaling: the RayCluster's in-tree autoscaler sets its worker groups' replicas
	// between their min and max.
	Autoscaling bool
	// Workers holds each worker group by name.
	Workers map[string]WorkerGroup
	// Serve holds each deployment the Serve config lists, by runningreplicas.ServeKey.
	Serve map[string]ServeDeployment
	// TargetCapacity is the config's own top-level target_capacity, nil when it has none: the
	// full set is what runs at it, and ServeTargetCapacity scales it.
	TargetCapacity *float64
}

// WorkerGroup is one worker group of a full set.
type WorkerGroup struct {
	// Size is the group's replicas as the spec gives them, KubeRay's defaults filled in
	// (minReplicas 0, maxReplicas 2^31-1, replicas minReplicas).
	Size WorkerGroupSize
	// NumOfHosts is the Pods of one replica (1 unless multi-host).
	NumOfHosts int32
	// Suspended groups run nothing.
	Suspended bool
	// Autoscaling is the set's: the autoscaler owns Replicas.
	Autoscaling bool
}

// Full is how many of the group's replicas must run for its colour to run its whole set. For a
// fixed group it is the replicas KubeRay keeps, clamped to the bounds as KubeRay clamps them.
// For an autoscaling group it is minReplicas: the autoscaler takes an idle group down to its
// min, so asking for more (or for the replicas it last wrote) would hold a quiet colour's
// traffic back for good; a min of 0 asks for nothing, and the group does not gate.
func (g WorkerGroup) Full() int32 {
	s := g.Size
	switch {
	case g.Suspended:
		return 0
	case g.Autoscaling:
		return min(s.MinReplicas, s.MaxReplicas)
	case s.Replicas < s.MinReplicas:
		return s.MinReplicas
	default:
		return min(s.Replicas, s.MaxReplicas)
	}
}

// ServeDeployment is one Serve deployment of a full set.
type ServeDeployment struct {
	// NumReplicas is num_replicas: Ray's default 1 when the config leaves it out (the code's
	// decorator may say otherwise; the hub cannot see it). 0 for an autoscaling deployment.
	NumReplicas int32
	// Autoscaling: num_replicas "auto" or an autoscaling_config; Serve moves the replicas
	// between MinReplicas and MaxReplicas.
	Autoscaling bool
	// MinReplicas and MaxReplicas are the autoscaling bounds with Ray's defaults (1 and 1,
	// or 1 and 100 for num_replicas "auto"); zero for a fixed deployment.
	MinReplicas, MaxReplicas int32
}

// Full is how many replicas of the deployment run in the whole set, at the config's own
// target_capacity. For an autoscaling deployment it is its (scaled) min, for the same reason as
// a worker group's: Serve takes an idle deployment down to it.
func (d ServeDeployment) Full(targetCapacity *float64) int32 {
	if d.Autoscaling {
		return ServeReplicas(d.MinReplicas, targetCapacity)
	}
	return ServeReplicas(d.NumReplicas, targetCapacity)
}

// ServeReplicas is Ray Serve's rule for the replicas a count n stands for at a target_capacity
// (Ray's get_capacity_adjusted_num_replicas): n when there is none or it is 100, 0 when it or n
// is 0, else n*capacity/100 rounded half up, and at least 1. It rounds to nearest, not up: at
// 40% a deployment of 3 runs 1 replica, a third of it.
func ServeReplicas(n int32, targetCapacity *float64) int32 {
	if targetCapacity == nil || *targetCapacity >= 100 {
		return n
	}
	if *targetCapacity <= 0 || n <= 0 {
		return 0
	}
	// The product is Ray's float product; the halves are compared on it rather than on a
	// quotient that float division may round.
	p := float64(n) * *targetCapacity
	r := math.Floor(p / 100)
	if p < 100*r {
		r--
	}
	if p-100*r >= 50 {
		r++
	}
	return max(1, int32(r))
}

// FullSet reads one colour's full set from the RayService spec it is placed with. A spec whose
// worker groups repeat a name or hold negative counts, or whose serveConfigV2 is not a Serve
// config Ray would accept in the parts read here, is an error saying which.
func FullSet(spec *rayv1.RayServiceSpec) (CapacitySet, error) {
	if spec == nil {
		return CapacitySet{}, fmt.Errorf("full set: no RayService spec")
	}
	set := CapacitySet{Autoscaling: rayspec.Autoscaling(&spec.RayClusterSpec), Workers: map[string]WorkerGroup{}}
	for i := range spec.RayClusterSpec.WorkerGroupSpecs {
		g := &spec.RayClusterSpec.WorkerGroupSpecs[i]
		if _, dup := set.Workers[g.GroupName]; dup {
			return CapacitySet{}, fmt.Errorf("full set: worker group %q appears twice", g.GroupName)
		}
		wg, err := workerGroup(g, set.Autoscaling)
		if err != nil {
			return CapacitySet{}, fmt.Errorf("full set: worker group %q: %w", g.GroupName, err)
		}
		set.Workers[g.GroupName] = wg
	}
	cfg, err := parseServeConfig(spec.ServeConfigV2)
	if err != nil {
		return CapacitySet{}, fmt.Errorf("full set: serveConfigV2: %w", err)
	}
	if set.TargetCapacity, err = cfg.targetCapacity(); err != nil {
		return CapacitySet{}, fmt.Errorf("full set: serveConfigV2: %w", err)
	}
	if set.Serve, err = cfg.deployments(); err != nil {
		return CapacitySet{}, fmt.Errorf("full set: serveConfigV2: %w", err)
	}
	return set, nil
}

// workerGroup reads one group's size, with the defaults the CRD gives absent fields.
func workerGroup(g *rayv1.WorkerGroupSpec, autoscaling bool) (WorkerGroup, error) {
	minReplicas := ptr.Deref(g.MinReplicas, 0)
	size := WorkerGroupSize{
		Replicas:    ptr.Deref(g.Replicas, minReplicas),
		MinReplicas: minReplicas,
		MaxReplicas: ptr.Deref(g.MaxReplicas, math.MaxInt32),
	}
	if size.Replicas < 0 || size.MinReplicas < 0 || size.MaxReplicas < 0 || g.NumOfHosts < 0 {
		return WorkerGroup{}, fmt.Errorf("negative count (replicas %d, minReplicas %d, maxReplicas %d, numOfHosts %d)",
			size.Replicas, size.MinReplicas, size.MaxReplicas, g.NumOfHosts)
	}
	return WorkerGroup{Size: size, NumOfHosts: max(g.NumOfHosts, 1), Suspended: ptr.Deref(g.Suspend, false), Autoscaling: autoscaling}, nil
}

// serveConfigDoc is the part of a Serve config (Ray's ServeDeploySchema) a full set needs.
type serveConfigDoc struct {
	TargetCapacity any              `json:"target_capacity"`
	Applications   []serveAppConfig `json:"applications"`
}

type serveAppConfig struct {
	Name        *string                 `json:"name"`
	Deployments []serveDeploymentConfig `json:"deployments"`
}

type serveDeploymentConfig struct {
	Name *string `json:"name"`
	// NumReplicas is a json.Number, "auto" or nil (absent or null).
	NumReplicas       any                `json:"num_replicas"`
	AutoscalingConfig *autoscalingConfig `json:"autoscaling_config"`
}

type autoscalingConfig struct {
	MinReplicas *int32 `json:"min_replicas"`
	MaxReplicas *int32 `json:"max_replicas"`
}

// parseServeConfig reads serveConfigV2 with the YAML rules KubeRay applies to it. A blank one is
// an empty config: no deployment, as validation has it.
func parseServeConfig(text string) (serveConfigDoc, error) {
	var cfg serveConfigDoc
	if len(text) > validation.MaxServeConfigV2Bytes {
		return cfg, tooLarge(len(text))
	}
	if strings.TrimSpace(text) == "" {
		return cfg, nil
	}
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return cfg, fmt.Errorf("not valid YAML: %w", err)
	}
	if !bytes.HasPrefix(js, []byte("{")) {
		return cfg, fmt.Errorf("not a YAML mapping")
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err = dec.Decode(&cfg); err != nil {
		return cfg, fmt.Errorf("not a Serve config: %w", err)
	}
	return cfg, nil
}

// tooLarge says a config of n bytes is over validation's bound.
func tooLarge(n int) error {
	return fmt.Errorf("%d bytes, over the %d a Serve config may have", n, validation.MaxServeConfigV2Bytes)
}

// targetCapacity is the config's own target_capacity: absent or null, or a number from 0 to
// 100 (Ray refuses anything else).
func (cfg serveConfigDoc) targetCapacity() (*float64, error) {
	if cfg.TargetCapacity == nil {
		return nil, nil
	}
	n, ok := cfg.TargetCapacity.(json.Number)
	if !ok {
		return nil, fmt.Errorf("target_capacity: must be a number, got %v", cfg.TargetCapacity)
	}
	f, err := n.Float64()
	if err != nil || f < 0 || f > 100 {
		return nil, fmt.Errorf("target_capacity: must be a number from 0 to 100, got %s", n)
	}
	return &f, nil
}

// deployments reads every deployment the config lists. Deployments an application's code
// declares without the config naming them are not listed, and cannot be counted.
func (cfg serveConfigDoc) deployments() (map[string]ServeDeployment, error) {
	out := map[string]ServeDeployment{}
	apps := map[string]bool{}
	for i, app := range cfg.Applications {
		name := ptr.Deref(app.Name, "")
		if name == "" {
			name = defaultServeApp
		}
		if apps[name] {
			return nil, fmt.Errorf("applications[%d]: application %q appears twice", i, name)
		}
		apps[name] = true
		for j, d := range app.Deployments {
			if ptr.Deref(d.Name, "") == "" {
				return nil, fmt.Errorf("application %q: deployments[%d]: no name", name, j)
			}
			key := runningreplicas.ServeKey(name, *d.Name)
			if _, dup := out[key]; dup {
				return nil, fmt.Errorf("application %q: deployment %q appears twice", name, *d.Name)
			}
			sd, err := d.deployment()
			if err != nil {
				return nil, fmt.Errorf("application %q: deployment %q: %w", name, *d.Name, err)
			}
			out[key] = sd
		}
	}
	return out, nil
}

// deployment reads one deployment's replicas as Ray's DeploymentSchema and AutoscalingConfig
// validate and default them.
func (d serveDeploymentConfig) deployment() (ServeDeployment, error) {
	auto := false
	// Ray's schema coerces a numeric string to the integer it spells.
	if s, ok := d.NumReplicas.(string); ok && s != "auto" {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			d.NumReplicas = json.Number(s)
		}
	}
	switch n := d.NumReplicas.(type) {
	case nil:
		if d.AutoscalingConfig == nil {
			return ServeDeployment{NumReplicas: 1}, nil
		}
	case json.Number:
		v, err := n.Int64()
		if err != nil || v < 1 || v > math.MaxInt32 {
			return ServeDeployment{}, fmt.Errorf("num_replicas: must be a positive integer or \"auto\", got %s", n)
		}
		if d.AutoscalingConfig != nil {
			return ServeDeployment{}, fmt.Errorf("num_replicas %s and an autoscaling_config: Ray allows one of them", n)
		}
		return ServeDeployment{NumReplicas: int32(v)}, nil
	case string:
		if n != "auto" {
			return ServeDeployment{}, fmt.Errorf("num_replicas: must be a positive integer or \"auto\", got %q", n)
		}
		auto = true
	default:
		return ServeDeployment{}, fmt.Errorf("num_replicas: must be a positive integer or \"auto\", got %v", n)
	}
	// Ray's AutoscalingConfig defaults to 1..1; num_replicas "auto" starts from 1..100.
	sd := ServeDeployment{Autoscaling: true, MinReplicas: 1, MaxReplicas: 1}
	if auto {
		sd.MaxReplicas = 100
	}
	if a := d.AutoscalingConfig; a != nil {
		sd.MinReplicas = ptr.Deref(a.MinReplicas, sd.MinReplicas)
		sd.MaxReplicas = ptr.Deref(a.MaxReplicas, sd.MaxReplicas)
	}
	if sd.MinReplicas < 0 || sd.MaxReplicas < 1 || sd.MinReplicas > sd.MaxReplicas {
		return ServeDeployment{}, fmt.Errorf("autoscaling_config: min_replicas %d and max_replicas %d: Ray needs 0 <= min <= max and max >= 1",
			sd.MinReplicas, sd.MaxReplicas)
	}
	return sd, nil
}

// RunningShareOf is the share of its full set a colour's copy runs, by RunningShare over its
// worker groups and the deployments its config lists, given the copy's running-replicas report.
// A multi-host group's replica counts once all of its Pods run. Groups and deployments the
// report names but the set does not are ignored, so the cost follows the set, not the report;
// counts above the full size count as the full size. What gates is each Full: a group or
// deployment whose Full is 0 does not, and a set where none gates runs whole (100), as there
// is nothing that could run more.
func RunningShareOf(set CapacitySet, r runningreplicas.Replicas) int32 {
	groups := make([]GroupRunning, 0, len(set.Workers)+len(set.Serve))
	for name, g := range set.Workers {
		full := g.Full()
		if full <= 0 {
			continue
		}
		pods := max(r.Workers[name], 0)
		groups = append(groups, boundedRunning(full, pods/max(g.NumOfHosts, 1)))
	}
	for key, d := range set.Serve {
		full := d.Full(set.TargetCapacity)
		if full <= 0 {
			continue
		}
		groups = append(groups, boundedRunning(full, max(r.Serve[key], 0)))
	}
	if len(groups) == 0 {
		return 100
	}
	return RunningShare(groups)
}

// boundedRunning is running of full, running capped at full, scaled down when full is too large
// for RunningShare's arithmetic.
func boundedRunning(full, running int32) GroupRunning {
	running = min(running, full)
	if full > maxShareCount {
		running = int32(int64(running) * maxShareCount / int64(full))
		full = maxShareCount
	}
	return GroupRunning{Full: full, Running: running}
}

// ServeTargetCapacity is the target_capacity that gives a copy at least capacity percent of
// every fixed deployment of its full set, rounded up to a replica as CarryReplicas rounds: the
// least whole percent, from capacity percent of the config's own target_capacity up, for which
// Ray's ServeReplicas gives each enough. Ray rounds to nearest, so it can be above the
// capacity: 3 replicas at 40% need 2, which Ray gives from 50%. Autoscaling deployments have
// their bounds scaled by the value as it is.
func ServeTargetCapacity(set CapacitySet, capacity int32) int32 {
	capacity = percent(capacity)
	own := 100.0
	if set.TargetCapacity != nil {
		own = *set.TargetCapacity
	}
	tc := int32(math.Ceil(own * float64(capacity) / 100))
	for ; tc < 100; tc++ {
		if servesEnough(set, capacity, tc) {
			break
		}
	}
	return min(tc, 100)
}

func servesEnough(set CapacitySet, capacity, tc int32) bool {
	at := float64(tc)
	for _, d := range set.Serve {
		if d.Autoscaling {
			continue
		}
		// CarryReplicas in 64 bits: a count near 2^31 times 100 overflows int32.
		need := (int64(d.Full(set.TargetCapacity))*int64(capacity) + 99) / 100
		if int64(ServeReplicas(d.NumReplicas, &at)) < need {
			return false
		}
	}
	return true
}
