package membership

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/rayfleet/rayfleet/shared/hubaccess"
)

const (
	// mintTimeout bounds one TokenRequest; requests to the member wait on it.
	mintTimeout = 10 * time.Second
	// mintRetry is how long the hub keeps the token it holds after a TokenRequest failed
	// (the member may not grant it yet), so that a refusal costs one request a minute, not
	// one per request.
	mintRetry = time.Minute
)

// mintFunc asks the member, authenticated by bearer, for a token of sa lasting ttl, and
// returns it with its expiry.
type mintFunc func(ctx context.Context, bearer string, sa types.NamespacedName, ttl time.Duration) (string, time.Time, error)

// memberTokens is the bearer token source of one member's clients. It starts from the
// bootstrap token of the member's kubeconfig and, when that token is a ServiceAccount's, mints
// tokens of ttl for the same ServiceAccount through TokenRequest (hubaccess.TokenRules grants
// it), each with the one before, replacing each at hubaccess.TokenRefreshFraction of its life.
// A member that does not grant TokenRequest is reached with the bootstrap token as is. The
// member's clients keep their transport and caches across refreshes and bootstrap rotations.
type memberTokens struct {
	member string
	clock  clock.PassiveClock
	ttl    time.Duration
	mint   mintFunc
	// failed is called after each TokenRequest the member refused (the failures counter).
	failed func()

	mu        sync.Mutex
	bootstrap string
	sa        *types.NamespacedName // nil when the bootstrap token is no ServiceAccount's
	current   string                // the last minted token; empty before the first
	mintedAt  time.Time
	refreshAt time.Time
	expires   time.Time
	retryAt   time.Time
	mints     int
	failure   *MintFailure // the refusal the source is in; nil after a success
}

var _ transport.ResettableTokenSource = &memberTokens{}

func newMemberTokens(member, bootstrap string, mint mintFunc, clk clock.PassiveClock, ttl time.Duration, failed func()) *memberTokens {
	if failed == nil {
		failed = func() {}
	}
	t := &memberTokens{member: member, clock: clk, ttl: ttl, mint: mint, failed: failed}
	t.setBootstrapLocked(bootstrap)
	return t
}

// Token returns the token to send: the minted one until its refresh time, then a new one;
// the bootstrap token when none can be minted.
func (t *memberTokens) Token() (*oauth2.Token, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	if t.current != "" && now.Before(t.refreshAt) {
		return &oauth2.Token{AccessToken: t.current}, nil
	}
	if t.sa == nil || now.Before(t.retryAt) {
		return &oauth2.Token{AccessToken: t.usableLocked(now)}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), mintTimeout)
	defer cancel()
	bearer := t.usableLocked(now)
	token, expires, err := t.mint(ctx, bearer, *t.sa, t.ttl)
	if err != nil && bearer != t.bootstrap {
		// The token held may have been revoked; the bootstrap token speaks for the member's
		// admin's latest join.
		token, expires, err = t.mint(ctx, t.bootstrap, *t.sa, t.ttl)
	}
	if err != nil {
		t.retryAt = now.Add(mintRetry)
		msg := redact(err.Error(), bearer, t.bootstrap)
		since := now
		if t.failure != nil {
			since = t.failure.Since
		}
		t.failure = &MintFailure{Since: since, Message: msg}
		t.failed()
		ctrl.Log.WithName("member-tokens").Info("Could not mint a token on the member; using the one held",
			"cluster", t.member, "serviceAccount", t.sa.String(), "retryIn", mintRetry.String(), "reason", msg)
		return &oauth2.Token{AccessToken: t.usableLocked(now)}, nil
	}
	t.current, t.mintedAt, t.expires, t.retryAt, t.failure = token, now, expires, time.Time{}, nil
	t.refreshAt = now.Add(time.Duration(float64(expires.Sub(now)) * hubaccess.TokenRefreshFraction))
	t.mints++
	return &oauth2.Token{AccessToken: token}, nil
}

// usableLocked is the minted token while it lasts, else the bootstrap token.
func (t *memberTokens) usableLocked(now time.Time) string {
	if t.current != "" && now.Before(t.expires) {
		return t.current
	}
	return t.bootstrap
}

// ResetTokenOlderThan drops a minted token the member refused (client-go calls it on a 401,
// with the real time the request started; the clock is the real one outside tests), so that
// the next request mints again from the bootstrap token.
func (t *memberTokens) ResetTokenOlderThan(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.current != "" && t.mintedAt.Before(at) {
		t.current = ""
	}
}

// SetBootstrap replaces the bootstrap token (a re-run `rayfleet join`) and drops the minted
// one, so that the next request proves the new token by minting with it.
func (t *memberTokens) SetBootstrap(bootstrap string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.setBootstrapLocked(bootstrap)
}

// MintFailure returns a copy of the refusal the source is in; nil when there is none.
func (t *memberTokens) MintFailure() *MintFailure {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failure == nil {
		return nil
	}
	f := *t.failure
	return &f
}

// setBootstrapLocked forgets the refusal too: the new token has not been refused yet.
func (t *memberTokens) setBootstrapLocked(bootstrap string) {
	t.bootstrap, t.current, t.retryAt, t.failure = bootstrap, "", time.Time{}, nil
	t.sa = nil
	if ns, name, ok := serviceAccountOf(bootstrap); ok {
		t.sa = &types.NamespacedName{Namespace: ns, Name: name}
	}
}

// serviceAccountOf reads which ServiceAccount a token claims to be (its JWT subject,
// unverified: the member authenticates every request and authorizes every TokenRequest).
func serviceAccountOf(token string) (namespace, name string, ok bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", "", false
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", "", false
	}
	namespace, name, err = serviceaccount.SplitUsername(claims.Subject)
	return namespace, name, err == nil
}

// mintWith mints through TokenRequest on the member base reaches, with base's TLS settings
// and rate limits and the given bearer token; base carries no credentials of its own.
func mintWith(base *rest.Config) mintFunc {
	return func(ctx context.Context, bearer string, sa types.NamespacedName, ttl time.Duration) (string, time.Time, error) {
		cfg := rest.CopyConfig(base)
		cfg.BearerToken = bearer
		c, err := corev1client.NewForConfig(cfg)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("creating a client: %w", err)
		}
		seconds := int64(ttl / time.Second)
		tr, err := c.ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}, metav1.CreateOptions{})
		if err != nil {
			return "", time.Time{}, fmt.Errorf("requesting a token for ServiceAccount %s: %w", sa, err)
		}
		return tr.Status.Token, tr.Status.ExpirationTimestamp.Time, nil
	}
}
