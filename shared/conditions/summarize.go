package conditions

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Summary says how Summarize words the condition it derives from several.
type Summary struct {
	// Type is the summary condition's type.
	Type string
	// TrueReason, FalseReason and UnknownReason are the summary's reason for each status.
	// Without an UnknownReason the summary is True or False: an Unknown input counts as False.
	TrueReason, FalseReason, UnknownReason string
	// TrueMessage is the message of a True summary when Counted is empty.
	TrueMessage string
	// Counted, when set, names what the True inputs are ("clusters ready"): the message then
	// opens with "<True inputs>/<inputs> <Counted>", which is all a True summary says.
	Counted string
}

// Summarize derives one condition from inputs, the worst status winning: False when any input
// is False, else Unknown when any is Unknown, else True (also when there are no inputs). A
// status other than True or False counts as Unknown. The message names every input that is not
// True as "<type>: <message>" (its reason when it has no message), False inputs before Unknown
// ones and each group in the order of inputs, so equal inputs give an equal message; what does
// not fit MaxMessageLength is counted as Join does. ObservedGeneration and LastTransitionTime
// are the caller's to stamp.
func Summarize(s Summary, inputs []metav1.Condition) metav1.Condition {
	var falses, unknowns []string
	good := 0
	for i := range inputs {
		in := &inputs[i]
		part := in.Type + ": " + detail(in)
		switch status(s, in.Status) {
		case metav1.ConditionTrue:
			good++
		case metav1.ConditionFalse:
			falses = append(falses, part)
		default:
			unknowns = append(unknowns, part)
		}
	}

	c := metav1.Condition{Type: s.Type}
	switch {
	case len(falses) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, s.FalseReason
	case len(unknowns) > 0:
		c.Status, c.Reason = metav1.ConditionUnknown, s.UnknownReason
	default:
		c.Status, c.Reason = metav1.ConditionTrue, s.TrueReason
	}
	parts := append(falses, unknowns...)
	switch {
	case s.Counted != "":
		c.Message = Join(fmt.Sprintf("%d/%d %s", good, len(inputs), s.Counted), parts...)
	case len(parts) == 0:
		c.Message = Truncate(s.TrueMessage)
	default:
		c.Message = Join(parts[0], parts[1:]...)
	}
	return c
}

// status is how Summarize ranks an input's status under s.
func status(s Summary, st metav1.ConditionStatus) metav1.ConditionStatus {
	switch {
	case st == metav1.ConditionTrue || st == metav1.ConditionFalse:
		return st
	case s.UnknownReason == "":
		return metav1.ConditionFalse
	default:
		return metav1.ConditionUnknown
	}
}

// detail is what Summarize says of an input that is not True.
func detail(c *metav1.Condition) string {
	if c.Message != "" {
		return c.Message
	}
	return c.Reason
}
