// Package serve holds what the RayService reconciler knows about Ray Serve on its clusters:
// the Serve configs it has submitted (a cache, since the dashboard does not report them back),
// whether a config must be submitted again, the JSON body of a submission, and the application
// statuses a dashboard reports, turned into the RayService's status. No API or dashboard calls
// are made here.
// Of the repository it imports only spoke/dashboard (the Serve details a dashboard reports),
// shared/validation (the size limit of a Serve config) and shared/conditions (cutting a failing
// application's message), never hub/ or the reconciler.
package serve

import (
	"maps"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"
	"k8s.io/apimachinery/pkg/types"
)

// CacheSize is how many RayServices the cache remembers, KubeRay's ServeConfigLRUSize. A
// RayService pushed out only costs one more submission of an unchanged config.
const CacheSize = 1000

// Submitted is what was last submitted to one cluster's dashboard.
type Submitted struct {
	// Config is the RayService's serveConfigV2 as submitted.
	Config string
	// TargetCapacity is the target_capacity sent with it; nil when none was.
	TargetCapacity *int32
}

// Cache remembers, per RayService and per RayCluster, the Serve config last submitted. Safe
// for concurrent use: the per-RayService maps are replaced, never modified, so a reader never
// sees one half-written, and writers take turns so that none loses another's entry.
type Cache struct {
	mu  sync.Mutex // serializes the read-modify-write of Put and Prune
	lru *lru.Cache[types.NamespacedName, map[string]Submitted]
}

// NewCache returns an empty cache holding up to size RayServices.
func NewCache(size int) *Cache {
	if size <= 0 {
		size = CacheSize
	}
	// New fails only on a non-positive size.
	c, _ := lru.New[types.NamespacedName, map[string]Submitted](size)
	return &Cache{lru: c}
}

// Get returns what was last submitted to cluster on behalf of the RayService rs.
func (c *Cache) Get(rs types.NamespacedName, cluster string) (Submitted, bool) {
	m, ok := c.lru.Get(rs)
	if !ok {
		return Submitted{}, false
	}
	s, ok := m[cluster]
	return s, ok
}

// Put records a successful submission to cluster on behalf of rs.
func (c *Cache) Put(rs types.NamespacedName, cluster string, s Submitted) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, _ := c.lru.Peek(rs)
	m := make(map[string]Submitted, len(old)+1)
	maps.Copy(m, old)
	m[cluster] = s
	c.lru.Add(rs, m)
}

// Prune forgets every cluster of rs but those named in keep (the active and pending ones);
// empty names are ignored.
func (c *Cache) Prune(rs types.NamespacedName, keep ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.lru.Peek(rs)
	if !ok {
		return
	}
	m := make(map[string]Submitted, len(keep))
	for _, name := range keep {
		if s, ok := old[name]; ok && name != "" {
			m[name] = s
		}
	}
	if len(m) == len(old) {
		return
	}
	c.lru.Add(rs, m)
}

// Forget drops everything remembered for rs (deleted).
func (c *Cache) Forget(rs types.NamespacedName) {
	c.lru.Remove(rs)
}
