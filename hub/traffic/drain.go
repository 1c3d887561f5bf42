package traffic

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OffInput is what OffTimes decides from.
type OffInput struct {
	// Accepted is set when the route in force was read and the gateway accepted it, and the
	// binding was read: without either, no cluster is known to be off.
	Accepted bool
	// Routed are the weights of the route in force.
	Routed map[string]int32
	// Recorded are the off times the binding records, for every cluster it lists; nil for a
	// cluster it records none for.
	Recorded map[string]*metav1.Time
	// Placed are the clusters the decision places the RayService on.
	Placed []string
	// Weights are the weights the decision gives the placed clusters.
	Weights map[string]int32
	// Now is the decision's time.
	Now time.Time
}

// OffTimes are, for the clusters the binding lists, since when the accepted route sends them
// nothing: kept from the binding while that holds, now when it starts to, dropped when the
// route gives them weight again or the gateway has not accepted the route. A placed cluster
// that neither route gives weight is off from now.
func OffTimes(in OffInput) map[string]metav1.Time {
	out := map[string]metav1.Time{}
	if !in.Accepted {
		return out
	}
	now := metav1.NewTime(in.Now.Truncate(time.Second))
	for name, recorded := range in.Recorded {
		switch {
		case in.Routed[name] != 0:
		case recorded != nil:
			out[name] = *recorded
		default:
			out[name] = now
		}
	}
	for _, name := range in.Placed {
		if _, listed := out[name]; !listed && in.Routed[name] == 0 && in.Weights[name] == 0 {
			out[name] = now
		}
	}
	return out
}

// Draining reports whether cluster may still get traffic: the gateway has not accepted a
// route without it delay ago (off are OffTimes' times).
func Draining(off map[string]metav1.Time, cluster string, now time.Time, delay time.Duration) bool {
	t, ok := off[cluster]
	return !ok || now.Before(t.Add(delay))
}
