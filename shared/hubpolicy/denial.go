package hubpolicy

import (
	"errors"
	"regexp"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// denialPattern finds the guard's message in the API server's: "hubPolicy/<rule>: <detail>"
// runs to the end, as the API server appends nothing after a policy's message.
var denialPattern = regexp.MustCompile(`hubPolicy/([A-Za-z]+): .*$`)

// ParseDenial recognises the API server's answer to a write the guard refused: a Forbidden
// (or, from a policy edited to another reason, Invalid) StatusError whose message holds
// "hubPolicy/<rule>: <detail>". It returns the rule (one of Rules) and the guard's message from
// "hubPolicy/" on, e.g. `hubPolicy/privileged: container "ray-head" in headGroupSpec asks for
// privileged`. Any other error, wrapped or not, gives ok false.
func ParseDenial(err error) (rule, message string, ok bool) {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return "", "", false
	}
	switch status.Status().Reason {
	case metav1.StatusReasonForbidden, metav1.StatusReasonInvalid:
	default:
		return "", "", false
	}
	m := denialPattern.FindStringSubmatch(status.Status().Message)
	if m == nil {
		return "", "", false
	}
	return m[1], m[0], true
}
