// Package expectations remembers the Pod creations and deletions a reconciler has asked for
// until the informer cache has seen them, so a reconcile that runs before the cache catches up
// does not create or delete the same Pods twice.
// A leaf: it imports no other RayFleet package, so never hub/ or shared/testing.
package expectations

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HeadGroup is the group key used for the head Pod.
const HeadGroup = ""

// Timeout bounds how long an unobserved creation blocks its group when the API server cannot
// be asked (see Satisfied).
const Timeout = 30 * time.Second

// Action is what was asked of the API server.
type Action int

const (
	// Create means the Pod should appear in the cache.
	Create Action = iota
	// Delete means the Pod should disappear from the cache.
	Delete
)

type groupKey struct {
	namespace, cluster, group string
}

type pending struct {
	action Action
	since  time.Time
}

// Scale records expected Pod changes per RayCluster group. It is safe for concurrent use by
// reconciles of different clusters.
type Scale struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	items map[groupKey]map[string]pending
}

// NewScale returns an empty expectation store using clk for timeouts.
func NewScale(clk clock.PassiveClock) *Scale {
	return &Scale{clock: clk, items: map[groupKey]map[string]pending{}}
}

// Expect records that the Pod named podName of the given group was created or deleted.
func (s *Scale) Expect(namespace, cluster, group, podName string, action Action) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := groupKey{namespace, cluster, group}
	if s.items[k] == nil {
		s.items[k] = map[string]pending{}
	}
	s.items[k][podName] = pending{action: action, since: s.clock.Now()}
}

// Satisfied reports whether every recorded change of the group is visible through cache.
// Observed changes are forgotten; the rest stay until seen or timed out. A created Pod the
// cache does not have is looked up in api (uncached): when the API server does not have it
// either, it was deleted before the cache saw it, and waiting longer would only stall the group.
func (s *Scale) Satisfied(ctx context.Context, cache, api client.Reader, namespace, cluster, group string) (bool, error) {
	k := groupKey{namespace, cluster, group}
	s.mu.Lock()
	names := make(map[string]pending, len(s.items[k]))
	for n, p := range s.items[k] {
		names[n] = p
	}
	s.mu.Unlock()

	satisfied := true
	for name, p := range names {
		seen, err := s.observed(ctx, cache, api, namespace, name, p)
		if err != nil {
			return false, err
		}
		if !seen {
			satisfied = false
			continue
		}
		s.forget(k, name, p)
	}
	return satisfied, nil
}

func (s *Scale) observed(ctx context.Context, cache, api client.Reader, namespace, name string, p pending) (bool, error) {
	var pod corev1.Pod
	key := types.NamespacedName{Namespace: namespace, Name: name}
	err := cache.Get(ctx, key, &pod)
	switch {
	case err == nil:
		if p.action == Create {
			return true, nil
		}
		// A Pod being deleted is gone as far as scaling is concerned: it must not be counted,
		// and waiting for its grace period would stall the group.
		return pod.DeletionTimestamp != nil, nil
	case apierrors.IsNotFound(err):
		if p.action == Delete || s.clock.Since(p.since) >= Timeout {
			return true, nil
		}
		if api == nil {
			return false, nil
		}
		switch apiErr := api.Get(ctx, key, &corev1.Pod{}); {
		case apierrors.IsNotFound(apiErr):
			return true, nil
		case apiErr != nil:
			return false, fmt.Errorf("get Pod %s: %w", key, apiErr)
		}
		return false, nil
	default:
		return false, err
	}
}

// forget drops one expectation unless it was replaced meanwhile.
func (s *Scale) forget(k groupKey, name string, p pending) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.items[k][name]; ok && cur == p {
		delete(s.items[k], name)
		if len(s.items[k]) == 0 {
			delete(s.items, k)
		}
	}
}

// Forget drops every expectation of a RayCluster (deleted, or all its Pods deleted at once).
func (s *Scale) Forget(namespace, cluster string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.items {
		if k.namespace == namespace && k.cluster == cluster {
			delete(s.items, k)
		}
	}
}

// Pending reports whether any change to the cluster's Pods is still unobserved.
func (s *Scale) Pending(namespace, cluster string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, m := range s.items {
		if k.namespace == namespace && k.cluster == cluster && len(m) > 0 {
			return true
		}
	}
	return false
}

// Len is the number of pending expectations, for tests and metrics.
func (s *Scale) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.items {
		n += len(m)
	}
	return n
}
