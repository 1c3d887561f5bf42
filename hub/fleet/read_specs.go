package fleet

// Phase: read. The hub RayServices' specs, kept beside a cache that holds none.

import (
	"encoding/json"
	"fmt"
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	sigsjson "sigs.k8s.io/json"
)

// HubSpecs keeps the specs of the hub RayServices as JSON, for a hub cache that stores the
// RayServices without them (Transform). A RayService's spec decoded is about 6 KB for 0.9 KB of
// JSON (pod templates: containers, resource maps, quantities), and the hub holds every hub
// RayService in its cache: at 10,000, 60 MB of decoded specs, kept here as 9 MB of JSON that a
// reconcile decodes again.
//
// A spec is known by the RayService's UID and generation: the API server moves
// metadata.generation with every change to a spec, so one generation has one spec. The memory
// holds one generation per RayService, the newest the cache's informer has seen, filled before
// the informer stores the object: a cached RayService finds its spec here unless the informer is
// storing a newer one at that instant.
type HubSpecs struct {
	mu    sync.Mutex
	specs map[types.NamespacedName]heldSpec
}

// heldSpec is one RayService's spec at one generation.
type heldSpec struct {
	uid        types.UID
	generation int64
	json       []byte
}

// NewHubSpecs returns an empty HubSpecs.
func NewHubSpecs() *HubSpecs {
	return &HubSpecs{specs: map[types.NamespacedName]heldSpec{}}
}

// Transform is the hub cache's transform of RayServices: base (nil: none), then the spec
// remembered and dropped. A spec that does not encode (none does: it was decoded from JSON) is
// kept in the cached object, and the reconciler reads that RayService from the API server.
func (s *HubSpecs) Transform(base toolscache.TransformFunc) toolscache.TransformFunc {
	return func(obj any) (any, error) {
		if base != nil {
			var err error
			if obj, err = base(obj); err != nil {
				return obj, err
			}
		}
		rs, ok := obj.(*rayv1.RayService)
		if !ok {
			return obj, nil
		}
		if s.remember(rs) {
			rs.Spec = rayv1.RayServiceSpec{}
		}
		return rs, nil
	}
}

// remember keeps rs's spec unless it is kept already; false when it cannot be encoded.
func (s *HubSpecs) remember(rs *rayv1.RayService) bool {
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	s.mu.Lock()
	held, ok := s.specs[key]
	s.mu.Unlock()
	if ok && held.uid == rs.UID && held.generation == rs.Generation {
		return true
	}
	raw, err := json.Marshal(&rs.Spec)
	if err != nil {
		return false
	}
	s.mu.Lock()
	s.specs[key] = heldSpec{uid: rs.UID, generation: rs.Generation, json: raw}
	s.mu.Unlock()
	return true
}

// fill sets the spec of hub, a RayService read from the cache, to the one remembered for its
// UID and generation; false when there is none (the informer is storing a newer generation).
func (s *HubSpecs) fill(hub *rayv1.RayService) (bool, error) {
	key := types.NamespacedName{Namespace: hub.Namespace, Name: hub.Name}
	s.mu.Lock()
	held, ok := s.specs[key]
	s.mu.Unlock()
	if !ok || held.uid != hub.UID || held.generation != hub.Generation {
		return false, nil
	}
	hub.Spec = rayv1.RayServiceSpec{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(held.json, &hub.Spec); err != nil {
		return false, fmt.Errorf("decoding the remembered spec of RayService %s: %w", key, err)
	}
	return true, nil
}

// forget drops what is held for the RayService key, which is gone. A nil HubSpecs holds nothing.
func (s *HubSpecs) forget(key types.NamespacedName) {
	if s == nil {
		return
	}
	s.mu.Lock()
	delete(s.specs, key)
	s.mu.Unlock()
}
