package propagation

import (
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/rayfleet/rayfleet/shared/conditions"
	"github.com/rayfleet/rayfleet/shared/hubpolicy"
)

// Rules of a refusal that does not come from the member's hub policy guard (whose rules are
// "hubPolicy/<rule>"); they are the values of RayServiceBinding status.refusals[].rule.
const (
	// RuleNamespaceTerminating: the copy's namespace is being deleted on the member, which
	// creates nothing in it until it is gone.
	RuleNamespaceTerminating = "NamespaceTerminating"
	// RuleRequestTooLarge: the member's API server (or its etcd) does not take an object that
	// large.
	RuleRequestTooLarge = "RequestTooLarge"
	// RuleInvalid: the member's API server rejected the object itself, for instance a CRD there
	// older than the fields the spec uses.
	RuleInvalid = "Invalid"
)

// guardRulePrefix marks the rules of the member's hub policy guard in a refusal.
const guardRulePrefix = "hubPolicy/"

// How long a refused member is left out before the hub tries it again with the same spec.
const (
	// RefusalRetry is for answers that only a change on the member can alter (its guard, its
	// CRD, its request size limit): an owner who loosens the guard sees the copy within ten
	// minutes, and the hub sends one refused request per ten minutes, not one per resync.
	RefusalRetry = 10 * time.Minute
	// TerminatingRetry is for a namespace being deleted, which is usually gone within seconds
	// to a minute; the copy then goes into the namespace created anew.
	TerminatingRetry = 30 * time.Second
)

// maxRefusalMessage bounds the member's answer kept in the binding (a denial of a RayService
// with many worker groups can name them all); it is the CRD's MaxLength of the field.
const maxRefusalMessage = 1024

// Refusal is a member API server's answer that retrying the same copy soon would only repeat:
// nothing of the copy exists on the member.
type Refusal struct {
	// Rule names what refused: "hubPolicy/<rule>" or one of the Rule constants.
	Rule string
	// Message is the member's answer, at most maxRefusalMessage bytes.
	Message string
	// Retry is how long to leave the member out before trying the same spec again.
	Retry time.Duration
}

// Error makes a Refusal an error, so the executor can return it from the call that got it.
func (r *Refusal) Error() string { return r.Rule + ": " + r.Message }

// NamespaceTerminating is the refusal for a copy whose namespace is being deleted on the
// member; the executor finds that out before it tries to apply.
func NamespaceTerminating(namespace string) *Refusal {
	return &Refusal{Rule: RuleNamespaceTerminating, Retry: TerminatingRetry,
		Message: fmt.Sprintf("namespace %s is being deleted on the member", namespace)}
}

// RefusalOf classifies an error of a create or apply on a member: a *Refusal (wrapped or not),
// a denial by the member's hub policy guard, a namespace being deleted, an object too large,
// or an object the member's schema rejects. Anything else (a timeout, a conflict, an
// unreachable member) is not a refusal: the caller retries it as a transient error.
func RefusalOf(err error) (*Refusal, bool) {
	if err == nil {
		return nil, false
	}
	if r, ok := errors.AsType[*Refusal](err); ok {
		return r, true
	}
	msg := err.Error()
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		msg = status.Status().Message
	}
	if rule, denial, ok := hubpolicy.ParseDenial(err); ok {
		rule = guardRulePrefix + rule
		msg = strings.TrimPrefix(denial, rule+": ")
		return &Refusal{Rule: rule, Message: conditions.TruncateTo(msg, maxRefusalMessage), Retry: RefusalRetry}, true
	}
	r := &Refusal{Message: conditions.TruncateTo(msg, maxRefusalMessage), Retry: RefusalRetry}
	switch {
	case apierrors.IsForbidden(err) && strings.Contains(msg, "because it is being terminated"):
		r.Rule, r.Retry = RuleNamespaceTerminating, TerminatingRetry
	case apierrors.IsRequestEntityTooLargeError(err) || strings.Contains(msg, "request is too large"):
		r.Rule = RuleRequestTooLarge
	case apierrors.IsInvalid(err):
		r.Rule = RuleInvalid
	default:
		return nil, false
	}
	return r, true
}
