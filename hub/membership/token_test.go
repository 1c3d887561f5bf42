package membership

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
)

// jwt is an unsigned token whose payload is claims; serviceAccountOf reads nothing else.
func jwt(claims string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc([]byte(claims)) + ".sig"
}

func saToken(ns, name, id string) string {
	return jwt(fmt.Sprintf(`{"sub":"system:serviceaccount:%s:%s","jti":%q}`, ns, name, id))
}

func TestServiceAccountOf(t *testing.T) {
	tests := []struct {
		name, token      string
		wantNS, wantName string
		wantOK           bool
	}{
		{name: "bound token", token: saToken("rayfleet-system", "rayfleet-hub-access", "1"),
			wantNS: "rayfleet-system", wantName: "rayfleet-hub-access", wantOK: true},
		{name: "a user's token", token: jwt(`{"sub":"alice"}`)},
		{name: "no subject", token: jwt(`{}`)},
		{name: "not a JWT", token: "opaque-static-token"},
		{name: "payload not base64", token: "a.!!!.c"},
		{name: "payload not JSON", token: "a." + base64.RawURLEncoding.EncodeToString([]byte("x")) + ".c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, name, ok := serviceAccountOf(tt.token)
			if ns != tt.wantNS || name != tt.wantName || ok != tt.wantOK {
				t.Errorf("serviceAccountOf = %q, %q, %v; want %q, %q, %v", ns, name, ok, tt.wantNS, tt.wantName, tt.wantOK)
			}
		})
	}
}

// fakeMinter mints "minted-N" tokens lasting the asked ttl, or refuses while refuse is set,
// and records the bearer of every request.
type fakeMinter struct {
	clock   *clocktesting.FakeClock
	refuse  func(bearer string) bool
	bearers []string
	n       int
}

func (f *fakeMinter) mint(_ context.Context, bearer string, sa types.NamespacedName, ttl time.Duration) (string, time.Time, error) {
	f.bearers = append(f.bearers, bearer)
	if f.refuse != nil && f.refuse(bearer) {
		return "", time.Time{}, errors.New("forbidden")
	}
	if sa != (types.NamespacedName{Namespace: "rayfleet-system", Name: "hub"}) {
		return "", time.Time{}, fmt.Errorf("minting for %s", sa)
	}
	f.n++
	return fmt.Sprintf("minted-%d", f.n), f.clock.Now().Add(ttl), nil
}

// step is one moment in a memberTokens' life: what happens, then the token sent and the
// bearers of the TokenRequests made meanwhile.
type step struct {
	do          func(ts *memberTokens, f *fakeMinter, clk *clocktesting.FakeClock)
	wantToken   string
	wantBearers []string
}

func TestMemberTokens(t *testing.T) {
	boot, boot2 := saToken("rayfleet-system", "hub", "b1"), saToken("rayfleet-system", "hub", "b2")
	wait := func(d time.Duration) func(*memberTokens, *fakeMinter, *clocktesting.FakeClock) {
		return func(_ *memberTokens, _ *fakeMinter, clk *clocktesting.FakeClock) { clk.Step(d) }
	}
	nothing := func(*memberTokens, *fakeMinter, *clocktesting.FakeClock) {}
	tests := []struct {
		name      string
		bootstrap string
		refuse    func(bearer string) bool
		steps     []step
	}{
		{
			name: "a token that is no ServiceAccount's is sent as is", bootstrap: "static",
			steps: []step{{do: nothing, wantToken: "static"}, {do: wait(48 * time.Hour), wantToken: "static"}},
		},
		{
			name: "minted with the bootstrap token, then each with the one before, at 80 % of an hour", bootstrap: boot,
			steps: []step{
				{do: nothing, wantToken: "minted-1", wantBearers: []string{boot}},
				{do: wait(47 * time.Minute), wantToken: "minted-1"},
				{do: wait(time.Minute), wantToken: "minted-2", wantBearers: []string{"minted-1"}},
				{do: wait(48 * time.Minute), wantToken: "minted-3", wantBearers: []string{"minted-2"}},
			},
		},
		{
			name: "a member that refuses TokenRequest is reached with the bootstrap token, asked again a minute later", bootstrap: boot,
			refuse: func(string) bool { return true },
			steps: []step{
				{do: nothing, wantToken: boot, wantBearers: []string{boot}},
				{do: wait(59 * time.Second), wantToken: boot},
				{do: wait(time.Second), wantToken: boot, wantBearers: []string{boot}},
			},
		},
		{
			name: "a refused refresh keeps the token held until it expires, then the bootstrap token", bootstrap: boot,
			refuse: func(bearer string) bool { return bearer != boot },
			steps: []step{
				{do: nothing, wantToken: "minted-1", wantBearers: []string{boot}},
				// The refresh with minted-1 is refused; the bootstrap token mints instead.
				{do: wait(48 * time.Minute), wantToken: "minted-2", wantBearers: []string{"minted-1", boot}},
			},
		},
		{
			name: "while minting fails the held token is sent until it expires", bootstrap: boot,
			steps: []step{
				{do: nothing, wantToken: "minted-1", wantBearers: []string{boot}},
				{do: func(_ *memberTokens, f *fakeMinter, clk *clocktesting.FakeClock) {
					f.refuse = func(string) bool { return true }
					clk.Step(48 * time.Minute)
				}, wantToken: "minted-1", wantBearers: []string{"minted-1", boot}},
				{do: wait(12 * time.Minute), wantToken: boot, wantBearers: []string{boot}},
			},
		},
		{
			name: "a rotated bootstrap token mints the next token at once", bootstrap: boot,
			steps: []step{
				{do: nothing, wantToken: "minted-1", wantBearers: []string{boot}},
				{do: func(ts *memberTokens, _ *fakeMinter, _ *clocktesting.FakeClock) { ts.SetBootstrap(boot2) },
					wantToken: "minted-2", wantBearers: []string{boot2}},
			},
		},
		{
			name: "a token the member refused (401) is replaced from the bootstrap token", bootstrap: boot,
			steps: []step{
				{do: nothing, wantToken: "minted-1", wantBearers: []string{boot}},
				{do: func(ts *memberTokens, _ *fakeMinter, clk *clocktesting.FakeClock) {
					clk.Step(time.Minute)
					ts.ResetTokenOlderThan(clk.Now())
				}, wantToken: "minted-2", wantBearers: []string{boot}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
			f := &fakeMinter{clock: clk, refuse: tt.refuse}
			ts := newMemberTokens("m1", tt.bootstrap, f.mint, clk, time.Hour, nil)
			for i, s := range tt.steps {
				f.bearers = nil
				s.do(ts, f, clk)
				tok, err := ts.Token()
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if tok.AccessToken != s.wantToken {
					t.Errorf("step %d: token %q, want %q", i, tok.AccessToken, s.wantToken)
				}
				if fmt.Sprint(f.bearers) != fmt.Sprint(s.wantBearers) {
					t.Errorf("step %d: TokenRequests made with %q, want %q", i, f.bearers, s.wantBearers)
				}
			}
		})
	}
}

// A kubeconfig that changes only its token keeps the member's transport (rotated in place);
// any other change builds a new one (the member is engaged again).
func TestEndpointOf(t *testing.T) {
	base := func() *rest.Config {
		return &rest.Config{Host: "https://m1:6443", BearerToken: "a",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), ServerName: "m1"}}
	}
	tests := []struct {
		name     string
		mutate   func(*rest.Config)
		wantSame bool
	}{
		{name: "another token", mutate: func(c *rest.Config) { c.BearerToken = "b" }, wantSame: true},
		{name: "another server", mutate: func(c *rest.Config) { c.Host = "https://m1.example:6443" }},
		{name: "another CA", mutate: func(c *rest.Config) { c.CAData = []byte("ca2") }},
		{name: "another TLS server name", mutate: func(c *rest.Config) { c.ServerName = "m2" }},
		{name: "a client certificate", mutate: func(c *rest.Config) { c.CertData, c.KeyData = []byte("cert"), []byte("key") }},
		{name: "bytes moved between fields", mutate: func(c *rest.Config) { c.CAData, c.ServerName = []byte("cam"), "1" }},
		{name: "compression off", mutate: func(c *rest.Config) { c.DisableCompression = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base()
			tt.mutate(changed)
			if same := endpointOf(base()) == endpointOf(changed); same != tt.wantSame {
				t.Errorf("same endpoint = %v, want %v", same, tt.wantSame)
			}
		})
	}
}
