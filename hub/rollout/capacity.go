package rollout

import (
	"fmt"
	"strings"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// CapacityDirection is which way a capacity-following BlueGreen change moves; the binding
// records it.
type CapacityDirection = fleetv1alpha1.CapacityDirection

// Directions of a capacity-following BlueGreen change.
const (
	// CapacityForward moves traffic and capacity from blue to green.
	CapacityForward = fleetv1alpha1.CapacityForward
	// CapacityUndo moves them back to blue the same way: blue grows first, then the traffic.
	CapacityUndo = fleetv1alpha1.CapacityUndo
	// CapacityRevert gives blue all of the traffic at once because green failed; blue grows
	// back while it is overloaded.
	CapacityRevert = fleetv1alpha1.CapacityRevert
)

// CapacityWait is why a capacity step did not move the traffic.
type CapacityWait string

const (
	// CapacityWaitRunning: the growing colour does not run more than the share it carries yet.
	CapacityWaitRunning CapacityWait = "Running"
	// CapacityWaitBound: the growing colour cannot be given more until the other one shrinks.
	CapacityWaitBound CapacityWait = "Bound"
	// CapacityWaitBlue: a revert waits for blue to run its whole set.
	CapacityWaitBlue CapacityWait = "BlueRunning"
)

// ColorCapacity is one colour's capacity, in percent of its full set.
type ColorCapacity struct {
	// Target is the capacity the colour was last given.
	Target int32
	// Running is the share of its full set that serves now (see RunningShare).
	Running int32
}

// CapacityInput is everything a capacity step depends on. Direction, GreenWeight and the two
// targets are the previous step's answer as the binding recorded it; the running shares come
// from the members' reports; the rest from the policy and the clock.
type CapacityInput struct {
	Direction CapacityDirection
	// SurgePercent is how much above one full set the two colours may hold together (1-100).
	SurgePercent int32
	// StepPercent is the most one step moves the traffic (1-100).
	StepPercent int32
	// GreenWeight is green's share of the traffic the gateway serves now.
	GreenWeight int32
	Green, Blue ColorCapacity
	// DeadlinePassed is whether the change has waited without moving for longer than the
	// strategy's deadline (the caller owns the clock and the time of the last move).
	DeadlinePassed bool
}

// Overload is a colour serving a larger share of the traffic than the share of its set that runs.
type Overload struct {
	Color fleetv1alpha1.Color
	// Traffic and Capacity are percents: of the traffic, and of the colour's full set.
	Traffic, Capacity int32
}

// CapacityStep is the next capacity targets and traffic share; the caller records them (they
// are the next CapacityInput's state) and carries them out.
type CapacityStep struct {
	// Direction may differ from the input's: a stalled change past its deadline turns back.
	Direction CapacityDirection
	// Green and Blue are the capacity targets, in percent of each colour's full set.
	Green, Blue int32
	// GreenWeight is green's admitted share of the traffic.
	GreenWeight int32
	// Wait says why the traffic did not move; "" when it moved or the change is done.
	Wait CapacityWait
	// Done: the traffic and the capacity are all on one colour.
	Done bool
	// Overloads lists the colours that serve more traffic than they run (a revert, a crash).
	Overloads []Overload
	// Message says where the change stands, for the status.
	Message string
}

// PlanCapacity decides the next step of a BlueGreen change whose capacity follows its traffic.
// The two colours' targets never add up to more than 100+SurgePercent, and never do with either
// colour's previous target, so the fleet holds at most (1+surge) sets while the executor moves
// from one step to the next; only a revert asks for all of blue at once, and Replicas grows it
// as green's replicas go. The traffic moves onto a colour only as far as that colour runs.
func PlanCapacity(in CapacityInput) CapacityStep {
	in.SurgePercent = min(max(in.SurgePercent, 1), 100)
	// A step larger than the surge could never be admitted at once: green runs at most
	// weight+surge, so one step moves at most surge.
	in.StepPercent = min(max(in.StepPercent, 1), in.SurgePercent)
	in.GreenWeight = percent(in.GreenWeight)
	var st CapacityStep
	switch in.Direction {
	case CapacityUndo:
		st = planUndo(in)
		if st.Wait != "" && in.DeadlinePassed {
			st = planRevert(in)
			st.Message = "blue did not grow back within the deadline; " + st.Message
		}
	case CapacityRevert:
		st = planRevert(in)
	default:
		st = planForward(in)
		if st.Wait != "" && in.DeadlinePassed {
			st = planUndo(in)
			st.Message = "green did not grow within the deadline; " + st.Message
		}
	}
	st.Overloads = overloads(st.GreenWeight, in.Green.Running, in.Blue.Running)
	if st.Direction != CapacityRevert { // a revert's message already says it
		for _, o := range st.Overloads {
			st.Message += fmt.Sprintf("; %s serves %d%% of the traffic on %d%% of its capacity", strings.ToLower(string(o.Color)), o.Traffic, o.Capacity)
		}
	}
	return st
}

func planForward(in CapacityInput) CapacityStep {
	g, b, w, wait := advance(in.Green, in.Blue, in.GreenWeight, in.SurgePercent, in.StepPercent)
	st := CapacityStep{Direction: CapacityForward, Green: g, Blue: b, GreenWeight: w, Wait: wait}
	st.Done = w == 100 && g == 100 && b == 0
	st.Message = fmt.Sprintf("green %d%% of the traffic; capacity green %d%%, blue %d%%%s", w, g, b, waitMessage(wait, fleetv1alpha1.ColorGreen, g))
	return st
}

// planUndo is planForward with the colours swapped: blue grows first, then takes the traffic
// back, then green shrinks behind it.
func planUndo(in CapacityInput) CapacityStep {
	b, g, blueWeight, wait := advance(in.Blue, in.Green, 100-in.GreenWeight, in.SurgePercent, in.StepPercent)
	st := CapacityStep{Direction: CapacityUndo, Green: g, Blue: b, GreenWeight: 100 - blueWeight, Wait: wait}
	st.Done = blueWeight == 100 && b == 100 && g == 0
	st.Message = fmt.Sprintf("undo: blue %d%% of the traffic; capacity blue %d%%, green %d%%%s", blueWeight, b, g, waitMessage(wait, fleetv1alpha1.ColorBlue, b))
	return st
}

// planRevert gives blue all of the traffic now and its whole set back; green shrinks to what the
// bound leaves beside a whole blue set, and leaves once blue runs all of it.
func planRevert(in CapacityInput) CapacityStep {
	st := CapacityStep{Direction: CapacityRevert, Blue: 100, Green: min(in.Green.Target, in.SurgePercent)}
	if percent(in.Blue.Running) >= 100 {
		st.Green, st.Done = 0, true
		st.Message = "reverted: blue serves all of the traffic on its whole set"
		return st
	}
	st.Wait = CapacityWaitBlue
	st.Message = fmt.Sprintf("reverted: blue serves 100%% of the traffic on %d%% of its capacity while it grows back", percent(in.Blue.Running))
	return st
}

// advance takes one step of moving traffic onto grow: grow gets the room one step ahead of the
// share it carries (within the bound beside shrink's target), the carried share moves onto what
// grow runs (one step at most), and shrink comes down to the share left to it by the traffic the
// gateway serves now, so that it is never below what it carries.
func advance(grow, shrink ColorCapacity, carried, surge, step int32) (growTo, shrinkTo, carriedTo int32, wait CapacityWait) {
	room := 100 + surge - percent(shrink.Target)
	growTo = min(max(percent(grow.Target), min(100, carried+surge)), room)
	// Only an input already over the bound gets here below its old target; it still keeps
	// what it carries.
	growTo = max(growTo, min(percent(grow.Target), carried))

	next := min(100, carried+step)
	carriedTo = carried
	if running := percent(grow.Running); running > carried {
		// What grow runs may fall between whole steps (a group of 3 replicas runs 34%, 67%):
		// the traffic follows it rather than wait for a share the bound may never allow.
		carriedTo = min(next, running)
	}
	shrinkTo = min(percent(shrink.Target), 100-carried)
	switch {
	case carriedTo > carried || carried == 100:
	case growTo <= carried:
		wait = CapacityWaitBound
	default:
		wait = CapacityWaitRunning
	}
	return growTo, shrinkTo, carriedTo, wait
}

func waitMessage(wait CapacityWait, growing fleetv1alpha1.Color, target int32) string {
	switch wait {
	case CapacityWaitRunning:
		return fmt.Sprintf("; paused until %s runs more of its %d%%", strings.ToLower(string(growing)), target)
	case CapacityWaitBound:
		return fmt.Sprintf("; paused until the other colour shrinks and leaves %s room within the surge", strings.ToLower(string(growing)))
	}
	return ""
}

func overloads(greenWeight, greenRunning, blueRunning int32) []Overload {
	var out []Overload
	if greenWeight > percent(greenRunning) {
		out = append(out, Overload{Color: fleetv1alpha1.ColorGreen, Traffic: greenWeight, Capacity: percent(greenRunning)})
	}
	if 100-greenWeight > percent(blueRunning) {
		out = append(out, Overload{Color: fleetv1alpha1.ColorBlue, Traffic: 100 - greenWeight, Capacity: percent(blueRunning)})
	}
	return out
}

func percent(p int32) int32 { return min(max(p, 0), 100) }

// SurgeReplicas is how many replicas a worker group of full size n may hold above n while both
// colours run: surge percent of n, rounded up, and at least one so that even a group of one or
// two can hand over. For a small group the bound in replicas is then wider than the percent: a
// group of 1 holds 2 at most whatever the surge.
func SurgeReplicas(n, surge int32) int32 {
	return max(1, ceilDiv(n*percent(surge), 100))
}

// CarryReplicas is how many of a group's n replicas a colour keeps for a capacity percent: rounded
// up, because it must carry its share of the traffic.
func CarryReplicas(n, capacity int32) int32 {
	return ceilDiv(n*percent(capacity), 100)
}

// GroupReplicas is one worker group's replicas for each colour.
type GroupReplicas struct {
	Green, Blue int32
}

// Replicas turns a step's capacity targets into one worker group's replicas, given those each
// colour holds now (running or still starting). The colour whose target went down keeps
// CarryReplicas (growing only into free room); the other also rounds up but gets no more than the
// room the first leaves within n+SurgeReplicas, counting what that one still holds, so that
// Green+Blue <= n+SurgeReplicas at every moment of the move if it held before. A revert grows
// blue the same way, as green's replicas go.
func Replicas(n, surge int32, st CapacityStep, held GroupReplicas) GroupReplicas {
	limit := n + SurgeReplicas(n, surge)
	growing, shrinking := CarryReplicas(n, st.Green), CarryReplicas(n, st.Blue)
	heldGrowing, heldShrinking := held.Green, held.Blue
	if st.Direction != CapacityForward {
		growing, shrinking, heldGrowing, heldShrinking = shrinking, growing, heldShrinking, heldGrowing
	}
	// Rounded up, the shrinking colour's target can be a replica more than the bound let it
	// have while it grew: it then keeps what it holds, which carries its traffic.
	if shrinking > heldShrinking {
		shrinking = max(heldShrinking, min(shrinking, limit-heldGrowing))
	}
	growing = min(growing, max(0, limit-max(shrinking, heldShrinking)))
	if st.Direction != CapacityForward {
		return GroupReplicas{Green: shrinking, Blue: growing}
	}
	return GroupReplicas{Green: growing, Blue: shrinking}
}

// WorkerGroupSize is a worker group's replicas as its spec gives them.
type WorkerGroupSize struct {
	Replicas, MinReplicas, MaxReplicas int32
}

// Limit is the group's size for a colour given at most limit replicas: the autoscaler keeps
// working under the limit rather than being pinned to it.
func (s WorkerGroupSize) Limit(limit int32) WorkerGroupSize {
	return WorkerGroupSize{Replicas: min(s.Replicas, limit), MinReplicas: min(s.MinReplicas, limit), MaxReplicas: min(s.MaxReplicas, limit)}
}

// GroupRunning is how many of a group's Full replicas run and serve now.
type GroupRunning struct {
	Full, Running int32
}

// RunningShare is the share of its full set a colour carries now: per group the running
// replicas in percent of the full size, rounded up to a whole percent (the traffic moves in
// whole percents: 1 of 3 replicas carries 34%, or a group of 3 with one replica of surge could
// never hand over), and the least over the groups, as the app needs all of them. Serve
// replicas count as one more group. No group, no share.
func RunningShare(groups []GroupRunning) int32 {
	if len(groups) == 0 {
		return 0
	}
	share := int32(100)
	for _, g := range groups {
		if g.Full <= 0 {
			continue
		}
		share = min(share, ceilDiv(100*max(g.Running, 0), g.Full))
	}
	return share
}

func ceilDiv(a, b int32) int32 { return (a + b - 1) / b }
