package membership

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	fleetv1alpha1 "github.com/rayfleet/rayfleet/shared/api/fleet/v1alpha1"
)

func TestTokenExpiry(t *testing.T) {
	tests := []struct {
		name, token string
		want        time.Time
		wantOK      bool
	}{
		{name: "bound token", token: jwt(`{"sub":"system:serviceaccount:a:b","exp":1798761600}`),
			want: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), wantOK: true},
		{name: "no exp (a legacy Secret token)", token: jwt(`{"sub":"system:serviceaccount:a:b"}`)},
		{name: "exp not a number", token: jwt(`{"exp":"soon"}`)},
		{name: "exp zero", token: jwt(`{"exp":0}`)},
		{name: "not a JWT", token: "opaque-static-token"},
		{name: "no token (client certificate)", token: ""},
		{name: "payload not base64", token: "a.!!!.c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tokenExpiry(tt.token)
			if !got.Equal(tt.want) || ok != tt.wantOK {
				t.Errorf("tokenExpiry = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestCredentialsCondition(t *testing.T) {
	const warn = 30 * 24 * time.Hour
	expiry := t0.Add(365 * 24 * time.Hour)
	refused := &MintFailure{Since: t0.Add(-time.Hour), Message: "Unauthorized"}
	tests := []struct {
		name        string
		bootstrap   *Bootstrap
		failure     *MintFailure
		now         time.Time
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string // substring
	}{
		{name: "no kubeconfig read", now: t0,
			wantStatus: metav1.ConditionUnknown, wantReason: fleetv1alpha1.ReasonCredentialsUnknown, wantMessage: "see Joined"},
		{name: "no expiry", bootstrap: &Bootstrap{}, now: t0,
			wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.ReasonNoTokenExpiry},
		{name: "a year left", bootstrap: &Bootstrap{Expiry: expiry}, now: t0,
			wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.ReasonTokenValid, wantMessage: "expires at 2027-03-01T12:00:00Z"},
		{name: "one second outside the window", bootstrap: &Bootstrap{Expiry: expiry}, now: expiry.Add(-warn - time.Second),
			wantStatus: metav1.ConditionTrue, wantReason: fleetv1alpha1.ReasonTokenValid},
		{name: "exactly at the window", bootstrap: &Bootstrap{Expiry: expiry}, now: expiry.Add(-warn),
			wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonBootstrapTokenExpiring,
			wantMessage: "expires at 2027-03-01T12:00:00Z (the hub's clock), within 720h0m0s; re-run `rayfleet join`"},
		{name: "one second before expiry", bootstrap: &Bootstrap{Expiry: expiry}, now: expiry.Add(-time.Second),
			wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonBootstrapTokenExpiring},
		{name: "expired", bootstrap: &Bootstrap{Expiry: expiry}, now: expiry,
			wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonBootstrapTokenExpired,
			wantMessage: "expired at 2027-03-01T12:00:00Z"},
		{name: "refused with a year left", bootstrap: &Bootstrap{Expiry: expiry}, failure: refused, now: t0,
			wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonTokenRequestFailed,
			wantMessage: "refused the hub a token since 2026-03-01T11:00:00Z: Unauthorized"},
		{name: "refused within the window: the refusal first", bootstrap: &Bootstrap{Expiry: expiry}, failure: refused,
			now: expiry.Add(-time.Hour), wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonTokenRequestFailed},
		{name: "refused and expired: the expiry first", bootstrap: &Bootstrap{Expiry: expiry}, failure: refused,
			now: expiry.Add(time.Hour), wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonBootstrapTokenExpired},
		{name: "refused without expiry", bootstrap: &Bootstrap{}, failure: refused, now: t0,
			wantStatus: metav1.ConditionFalse, wantReason: fleetv1alpha1.ReasonTokenRequestFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := credentialsCondition(tt.bootstrap, tt.failure, warn, tt.now)
			if c.Type != fleetv1alpha1.ConditionCredentialsValid || c.Status != tt.wantStatus || c.Reason != tt.wantReason ||
				!strings.Contains(c.Message, tt.wantMessage) {
				t.Errorf("credentialsCondition = %s/%s %q; want %s/%s containing %q",
					c.Status, c.Reason, c.Message, tt.wantStatus, tt.wantReason, tt.wantMessage)
			}
			// The message names times, not durations: the next resync writes nothing.
			if later := credentialsCondition(tt.bootstrap, tt.failure, warn, tt.now.Add(time.Minute)); later.Reason == c.Reason &&
				later.Message != c.Message {
				t.Errorf("message changed a minute later: %q then %q", c.Message, later.Message)
			}
		})
	}
}

// TestStatusCredentials checks the condition and status.credentials in Status, driven by a
// fake clock across the warning window, and that a refusal counts only on a joined member.
func TestStatusCredentials(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	expiry := t0.Add(40 * 24 * time.Hour)
	b := &Bootstrap{Expiry: expiry}
	observe := func(js JoinState, failure *MintFailure) Observation {
		return Observation{Now: clk.Now(), HeartbeatTimeout: DefaultHeartbeatTimeout, Join: js, Report: report(clk.Now()),
			MintFailure: failure, CredentialExpiryWarning: DefaultCredentialExpiryWarning}
	}
	st := Status(fleetv1alpha1.MemberClusterStatus{}, observe(JoinState{Joined: true, Bootstrap: b}, nil))
	if c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionCredentialsValid); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("CredentialsValid with 40 days left = %+v, want True", c)
	}
	if st.Credentials == nil || st.Credentials.BootstrapExpiry == nil || !st.Credentials.BootstrapExpiry.Equal(&metav1.Time{Time: expiry}) {
		t.Errorf("status.credentials = %+v, want bootstrapExpiry %s", st.Credentials, expiry)
	}
	clk.Step(11 * 24 * time.Hour)
	st = Status(st, observe(JoinState{Joined: true, Bootstrap: b}, nil))
	c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionCredentialsValid)
	if c.Status != metav1.ConditionFalse || c.Reason != fleetv1alpha1.ReasonBootstrapTokenExpiring || !c.LastTransitionTime.Equal(&metav1.Time{Time: clk.Now()}) {
		t.Errorf("CredentialsValid with 29 days left = %+v, want False/BootstrapTokenExpiring since now", c)
	}
	if !meta.IsStatusConditionTrue(st.Conditions, fleetv1alpha1.ConditionReady) {
		t.Errorf("an expiring token turned Ready False; it must not count towards Ready")
	}
	notJoined := JoinState{Reason: fleetv1alpha1.ReasonEngaging, Bootstrap: &Bootstrap{}}
	st = Status(st, observe(notJoined, &MintFailure{Since: t0, Message: "Unauthorized"}))
	if c := meta.FindStatusCondition(st.Conditions, fleetv1alpha1.ConditionCredentialsValid); c.Reason != fleetv1alpha1.ReasonNoTokenExpiry {
		t.Errorf("a refusal on a member not joined gave %s, want it ignored", c.Reason)
	}
	st = Status(st, observe(JoinState{Reason: fleetv1alpha1.ReasonKubeconfigSecretNotFound}, nil))
	if st.Credentials != nil {
		t.Errorf("status.credentials = %+v with no Secret, want nil", st.Credentials)
	}
}

// TestMemberTokensMintFailure checks that a refusal is recorded with the tokens cut out of its
// message, counted, kept with its first time while refusals go on, and cleared by a success
// or a new bootstrap token.
func TestMemberTokensMintFailure(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	boot := saToken("rayfleet-system", "hub", "b1")
	refuse := true
	mint := func(_ context.Context, bearer string, _ types.NamespacedName, ttl time.Duration) (string, time.Time, error) {
		if refuse {
			return "", time.Time{}, errors.New("Unauthorized: token " + bearer + " rejected")
		}
		return "minted", clk.Now().Add(ttl), nil
	}
	failures := 0
	ts := newMemberTokens("m1", boot, mint, clk, time.Hour, func() { failures++ })
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	f := ts.MintFailure()
	if f == nil || !f.Since.Equal(t0) || strings.Contains(f.Message, boot) || !strings.Contains(f.Message, "[token]") {
		t.Fatalf("MintFailure = %+v, want one since t0 with the token cut out", f)
	}
	clk.Step(mintRetry)
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	if f := ts.MintFailure(); f == nil || !f.Since.Equal(t0) || failures != 2 {
		t.Errorf("after a second refusal: MintFailure = %+v, failures %d; want since t0 and 2", f, failures)
	}
	refuse = false
	clk.Step(mintRetry)
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "minted" {
		t.Fatalf("Token = %v, %v; want minted", tok, err)
	}
	if f := ts.MintFailure(); f != nil {
		t.Errorf("MintFailure after a success = %+v, want nil", f)
	}
	refuse = true
	ts.ResetTokenOlderThan(clk.Now().Add(time.Second))
	if _, err := ts.Token(); err != nil {
		t.Fatal(err)
	}
	if ts.MintFailure() == nil {
		t.Fatalf("no MintFailure after a refusal")
	}
	ts.SetBootstrap(saToken("rayfleet-system", "hub", "b2"))
	if f := ts.MintFailure(); f != nil {
		t.Errorf("MintFailure after a new bootstrap token = %+v, want nil", f)
	}
}
