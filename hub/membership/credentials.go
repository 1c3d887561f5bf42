package membership

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

// DefaultCredentialExpiryWarning is how long before its bootstrap token expires a member's
// CredentialsValid turns False: `rayfleet join` gives the token a year by default, and a month
// leaves time to re-run it through a change process.
const DefaultCredentialExpiryWarning = 30 * 24 * time.Hour

// rejoinAdvice ends the messages of CredentialsValid=False: what mends each of them.
const rejoinAdvice = "re-run `rayfleet join` for this member to give the hub a new bootstrap token"

// Bootstrap is what the bootstrap credential of a member's kubeconfig says of itself.
type Bootstrap struct {
	// Expiry is the token's exp claim; zero when the credential carries none (a client
	// certificate, a token that is no JWT or has no exp).
	Expiry time.Time
}

// MintFailure is the member's refusal of the hub's last TokenRequest.
type MintFailure struct {
	// Since is when the first TokenRequest of the current run of failures failed.
	Since time.Time
	// Message is the error, with the tokens the hub sent cut out.
	Message string
}

// MintFailures reports, by member name, the TokenRequest failure that the hub's token source
// of the member is in; Provider is one.
type MintFailures interface {
	// MintFailure returns the member's current failure, nil when its last TokenRequest
	// succeeded, none was made yet or the member is not engaged.
	MintFailure(member string) *MintFailure
}

// bootstrapOf reads the expiry of a bearer token; an empty token (a client certificate) or
// one that is no JWT with an exp claim has none.
func bootstrapOf(token string) *Bootstrap {
	b := &Bootstrap{}
	if exp, ok := tokenExpiry(token); ok {
		b.Expiry = exp
	}
	return b
}

// tokenExpiry reads a JWT's exp claim without verifying the token: it is the hub's own
// credential, read for display, and the member's API server judges it on every request.
func tokenExpiry(token string) (time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Expiry *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Expiry == nil {
		return time.Time{}, false
	}
	seconds, err := claims.Expiry.Float64()
	if err != nil || seconds <= 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(seconds), 0).UTC(), true
}

// redact cuts the tokens out of a message, so that none lands in a status or a log.
func redact(message string, tokens ...string) string {
	for _, t := range tokens {
		if t != "" {
			message = strings.ReplaceAll(message, t, "[token]")
		}
	}
	return message
}

// credentialsStatus is status.credentials for what the kubeconfig's credential says; nil
// when the Secret gave none.
func credentialsStatus(b *Bootstrap) *fleetv1alpha1.MemberCredentials {
	if b == nil {
		return nil
	}
	c := &fleetv1alpha1.MemberCredentials{}
	if !b.Expiry.IsZero() {
		at := metav1.NewTime(b.Expiry)
		c.BootstrapExpiry = &at
	}
	return c
}

// credentialsCondition is CredentialsValid: False when the bootstrap token has expired, when
// the member refuses the hub a token, or when the bootstrap token expires within warn of now,
// in that order (the first loses the member at the hub's next restart, the second may already
// have). Messages name times rather than durations, so that an unchanged state writes nothing.
func credentialsCondition(b *Bootstrap, failure *MintFailure, warn time.Duration, now time.Time) metav1.Condition {
	c := metav1.Condition{Type: fleetv1alpha1.ConditionCredentialsValid, Status: metav1.ConditionFalse}
	if b == nil {
		c.Status, c.Reason = metav1.ConditionUnknown, fleetv1alpha1.ReasonCredentialsUnknown
		c.Message = "the hub reads no kubeconfig from the member's Secret (see Joined)"
		return c
	}
	expires := ""
	if !b.Expiry.IsZero() {
		expires = b.Expiry.UTC().Format(time.RFC3339)
	}
	switch {
	case expires != "" && !now.Before(b.Expiry):
		c.Reason = fleetv1alpha1.ReasonBootstrapTokenExpired
		c.Message = fmt.Sprintf("the bootstrap token expired at %s (the hub's clock): the hub reaches the member only "+
			"with the tokens it minted before, and not after it restarts; %s", expires, rejoinAdvice)
	case failure != nil:
		c.Reason = fleetv1alpha1.ReasonTokenRequestFailed
		c.Message = fmt.Sprintf("the member has refused the hub a token since %s: %s; the hub keeps using the token "+
			"it holds; %s", failure.Since.UTC().Format(time.RFC3339), failure.Message, rejoinAdvice)
	case expires != "" && b.Expiry.Sub(now) <= warn:
		c.Reason = fleetv1alpha1.ReasonBootstrapTokenExpiring
		c.Message = fmt.Sprintf("the bootstrap token expires at %s (the hub's clock), within %s; %s",
			expires, warn, rejoinAdvice)
	case expires != "":
		c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.ReasonTokenValid
		c.Message = fmt.Sprintf("the bootstrap token expires at %s (the hub's clock)", expires)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, fleetv1alpha1.ReasonNoTokenExpiry
		c.Message = "the kubeconfig's credential carries no expiry the hub can read"
	}
	return c
}
