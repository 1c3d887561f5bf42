package rollout

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// Strategy is a PlacementPolicy's rollout with the defaults applied and the selectors parsed.
type Strategy struct {
	// Type is Rolling or None.
	Type fleetv1alpha1.RolloutType
	// MaxUnavailable is how many clusters of a stage are in flight at once: a number or a
	// percentage of the placed clusters.
	MaxUnavailable intstr.IntOrString
	// Soak is how long a cluster stays done before it counts as updated.
	Soak time.Duration
	// Deadline is how long one cluster may be updating before the rollout stalls.
	Deadline time.Duration
	// AutoRollback returns the fleet to the good revision when the rollout stalls.
	AutoRollback bool
	// Stages are the policy's stages in order, without the implicit last one (a last stage
	// named fleetv1alpha1.ImplicitStageName is that stage, made explicit).
	Stages []Stage
	// SortingLabelKey orders the clusters of a stage by this label's value, then name.
	SortingLabelKey string
	// BlueGreen tunes a BlueGreen rollout (Type BlueGreen only).
	BlueGreen BlueGreen
}

// BlueGreen is a BlueGreen rollout's settings with the defaults applied.
type BlueGreen struct {
	// Step is how many percent of the traffic one step moves to green (1 to 100).
	Step int32
	// Interval is the time between two steps, from the gateway's acceptance of the last one.
	Interval time.Duration
	// RetireAfter is how long green holds all of the traffic before blue leaves.
	RetireAfter time.Duration
	// Approval makes the rollout wait for approvals of the stages "shift" and "promote".
	Approval bool
	// FallbackRolling updates the blue clusters in place when no green set can be chosen.
	FallbackRolling bool
	// Capacity makes each colour's capacity follow its share of the traffic (PlanCapacity).
	Capacity bool
	// Surge is, with Capacity, how many percent above one full set the colours may hold
	// together (1 to 100).
	Surge int32
}

// blueGreenOf applies the defaults to b (nil has every default).
func blueGreenOf(b *fleetv1alpha1.BlueGreenStrategy) BlueGreen {
	out := BlueGreen{
		Step:        fleetv1alpha1.DefaultBlueGreenStepPercent,
		Interval:    seconds(fleetv1alpha1.DefaultBlueGreenIntervalSeconds),
		RetireAfter: seconds(fleetv1alpha1.DefaultBlueGreenRetireAfterSeconds),
	}
	if b == nil {
		return out
	}
	if b.StepPercent != nil {
		out.Step = min(max(*b.StepPercent, 1), 100)
	}
	if b.IntervalSeconds != nil {
		out.Interval = seconds(*b.IntervalSeconds)
	}
	if b.RetireAfterSeconds != nil {
		out.RetireAfter = seconds(*b.RetireAfterSeconds)
	}
	out.Approval = b.Approval
	out.FallbackRolling = b.Fallback == fleetv1alpha1.FallbackRolling
	if c := b.Capacity; c != nil {
		out.Capacity, out.Surge = true, fleetv1alpha1.DefaultBlueGreenSurgePercent
		if c.SurgePercent != nil {
			out.Surge = min(max(*c.SurgePercent, 1), 100)
		}
	}
	return out
}

// Stage is one stage of a Rolling rollout.
type Stage struct {
	// Name identifies the stage in the status and in approvals.
	Name string
	// Selector picks the stage's clusters among those no earlier stage took.
	Selector k8slabels.Selector
	// MaxConcurrency overrides MaxUnavailable for the stage (a percentage is of the stage's
	// clusters); nil means MaxUnavailable.
	MaxConcurrency *intstr.IntOrString
	// Soak overrides the rollout's soak for the stage; nil means Strategy.Soak.
	Soak *time.Duration
	// Approval makes the stage wait for an approval of the target revision before it starts.
	Approval bool
}

// StrategyOf applies the defaults to r (nil is a Rolling rollout with every default) and parses
// its selectors. The error names what the CRD schema cannot catch: a selector that does not
// parse, a concurrency that is no number or percentage, an unknown type, the implicit stage's
// name on a stage that is not the last.
func StrategyOf(r *fleetv1alpha1.RolloutStrategy) (Strategy, error) {
	s := Strategy{
		Type:           fleetv1alpha1.RolloutRolling,
		MaxUnavailable: intstr.FromInt32(fleetv1alpha1.DefaultMaxUnavailableClusters),
		Soak:           seconds(fleetv1alpha1.DefaultSoakSeconds),
		Deadline:       seconds(fleetv1alpha1.DefaultProgressDeadlineSeconds),
	}
	if r == nil {
		return s, nil
	}
	switch r.Type {
	case "", fleetv1alpha1.RolloutRolling:
	case fleetv1alpha1.RolloutNone, fleetv1alpha1.RolloutBlueGreen:
		s.Type = r.Type
	default:
		return Strategy{}, fmt.Errorf("rollout type %q: want %s, %s or %s", r.Type,
			fleetv1alpha1.RolloutRolling, fleetv1alpha1.RolloutNone, fleetv1alpha1.RolloutBlueGreen)
	}
	if s.Type == fleetv1alpha1.RolloutBlueGreen {
		if len(r.Stages) > 0 {
			return Strategy{}, errors.New("stages are not used with type BlueGreen: green is one set of clusters, updated at once")
		}
		s.BlueGreen = blueGreenOf(r.BlueGreen)
	} else if r.BlueGreen != nil {
		return Strategy{}, fmt.Errorf("blueGreen is only used with type %s", fleetv1alpha1.RolloutBlueGreen)
	}
	if r.MaxUnavailableClusters != nil {
		if err := checkCount(*r.MaxUnavailableClusters); err != nil {
			return Strategy{}, fmt.Errorf("maxUnavailableClusters: %w", err)
		}
		s.MaxUnavailable = *r.MaxUnavailableClusters
	}
	if r.SoakSeconds != nil {
		s.Soak = seconds(*r.SoakSeconds)
	}
	if r.ProgressDeadlineSeconds != nil {
		s.Deadline = seconds(*r.ProgressDeadlineSeconds)
	}
	s.AutoRollback = r.AutoRollback
	s.SortingLabelKey = r.SortingLabelKey
	for i := range r.Stages {
		st, err := stageOf(&r.Stages[i], i == len(r.Stages)-1)
		if err != nil {
			return Strategy{}, fmt.Errorf("stage %q: %w", r.Stages[i].Name, err)
		}
		s.Stages = append(s.Stages, st)
	}
	return s, nil
}

// stageOf parses one RolloutStage; last says whether it may carry the implicit stage's name.
func stageOf(in *fleetv1alpha1.RolloutStage, last bool) (Stage, error) {
	if in.Name == fleetv1alpha1.ImplicitStageName && !last {
		return Stage{}, fmt.Errorf("only the last stage may be named %q: the clusters no stage selects are updated last",
			fleetv1alpha1.ImplicitStageName)
	}
	if in.ClusterSelector == nil {
		return Stage{}, errors.New("clusterSelector is required (an empty one selects every cluster not yet taken)")
	}
	sel, err := metav1.LabelSelectorAsSelector(in.ClusterSelector)
	if err != nil {
		return Stage{}, fmt.Errorf("clusterSelector: %w", err)
	}
	st := Stage{Name: in.Name, Selector: sel, Approval: in.Approval}
	if in.MaxConcurrency != nil {
		if err := checkCount(*in.MaxConcurrency); err != nil {
			return Stage{}, fmt.Errorf("maxConcurrency: %w", err)
		}
		mc := *in.MaxConcurrency
		st.MaxConcurrency = &mc
	}
	if in.SoakSeconds != nil {
		soak := seconds(*in.SoakSeconds)
		st.Soak = &soak
	}
	return st, nil
}

// checkCount rejects a concurrency that is neither a number nor a percentage, or that is
// below 1 or 1%, or above 100%: the API's schema leaves these to the hub.
func checkCount(v intstr.IntOrString) error {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, 100, false)
	switch {
	case err != nil:
		return err
	case n < 1:
		return fmt.Errorf("%s: must be at least 1 or 1%%", v.String())
	case v.Type == intstr.String && n > 100:
		return fmt.Errorf("%s: a percentage must be at most 100%%", v.String())
	}
	return nil
}

// scaled is v of total (a number, or a percentage of total rounded down), at least 1.
func scaled(v intstr.IntOrString, total int) int {
	n, err := intstr.GetScaledValueFromIntOrPercent(&v, total, false)
	if err != nil || n < 1 {
		// StrategyOf rejected what does not parse; a Strategy built in Go gets the safe value.
		return 1
	}
	return n
}

// seconds is n seconds as a Duration.
func seconds(n int32) time.Duration { return time.Duration(n) * time.Second }
