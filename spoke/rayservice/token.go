package rayservice

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/rayspec"
	"github.com/rayfleet/rayfleet/spoke/builder"
	"github.com/rayfleet/rayfleet/spoke/dashboard"
)

// tokenTTL bounds how long a Ray auth token read from its Secret is reused. Tokens are created
// once with their cluster and rarely rotated; a rejected token is dropped at once anyway.
const tokenTTL = 5 * time.Minute

// tokenCache keeps the Ray auth tokens the reconciler has read. They are read with a GET
// through the API reader, not a Secret informer: caching Secrets would need list and watch on
// every Secret of the member cluster (RBAC cannot narrow those by label), and polling a
// RayService every 2 s must not cost a GET each time either.
type tokenCache struct {
	clock   clock.PassiveClock
	reader  client.Reader
	mu      sync.Mutex
	entries map[types.NamespacedName]cachedToken
}

type cachedToken struct {
	token   string
	fetched time.Time
}

func newTokenCache(reader client.Reader, clk clock.PassiveClock) *tokenCache {
	return &tokenCache{clock: clk, reader: reader, entries: map[types.NamespacedName]cachedToken{}}
}

// get returns rc's Ray auth token, "" when token auth is off. The token is never logged.
func (c *tokenCache) get(ctx context.Context, rc *rayv1.RayCluster) (string, error) {
	if !rayspec.TokenAuth(&rc.Spec) {
		return "", nil
	}
	key := types.NamespacedName{Namespace: rc.Namespace, Name: builder.AuthSecretName(rc)}
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Sub(e.fetched) < tokenTTL {
		return e.token, nil
	}
	var secret corev1.Secret
	if err := c.reader.Get(ctx, key, &secret); err != nil {
		return "", fmt.Errorf("get auth Secret %s: %w", key, err)
	}
	token, ok := secret.Data[builder.AuthTokenKey]
	if !ok {
		return "", fmt.Errorf("auth Secret %s has no key %q", key, builder.AuthTokenKey)
	}
	c.mu.Lock()
	c.entries[key] = cachedToken{token: string(token), fetched: now}
	c.mu.Unlock()
	return string(token), nil
}

// forgetIfRejected drops rc's token when the dashboard refused it, so that the next call
// reads the Secret again (the user may have rotated it).
func (c *tokenCache) forgetIfRejected(rc *rayv1.RayCluster, err error) {
	var se *dashboard.StatusError
	if !errors.As(err, &se) || (se.StatusCode != http.StatusUnauthorized && se.StatusCode != http.StatusForbidden) {
		return
	}
	c.mu.Lock()
	delete(c.entries, types.NamespacedName{Namespace: rc.Namespace, Name: builder.AuthSecretName(rc)})
	c.mu.Unlock()
}
