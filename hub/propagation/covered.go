package propagation

import (
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Covered remembers, for each member copy, the desired spec it was last seen to contain (by
// its SpecHash) and the copy's metadata.generation at that moment. The hub's member caches
// keep copies without their spec (TrimCopy): at 10,000 RayServices the 16,000 decoded specs
// were a fifth of the hub's memory, and the drift check is their only reader. A copy's
// generation moves with every change of its spec, whoever makes it, so a copy still at the
// remembered generation still contains the remembered spec; only a copy not remembered (a
// restarted hub, someone else's edit) has its spec read from its member's API server.
//
// It is memory only, and small: a key and two short values per placed copy.
type Covered struct {
	mu     sync.Mutex
	copies map[coveredKey]coveredAt
}

// coveredKey is one copy: its cluster and its namespace and name.
type coveredKey struct {
	cluster string
	key     types.NamespacedName
}

// coveredAt is what was seen of one copy: the object (a copy deleted and made again under the
// same name is another), its generation, and the hash of the desired spec it contained.
type coveredAt struct {
	uid        types.UID
	generation int64
	digest     string
}

// NewCovered returns an empty memory.
func NewCovered() *Covered {
	return &Covered{copies: map[coveredKey]coveredAt{}}
}

// Digest returns the SpecHash of the desired spec that copy, on cluster, was last seen to
// contain, when copy is still the object and the generation that was seen.
func (c *Covered) Digest(cluster string, copy *rayv1.RayService) (string, bool) {
	if copy == nil {
		return "", false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.copies[coveredKey{cluster, types.NamespacedName{Namespace: copy.Namespace, Name: copy.Name}}]
	if !ok || at.uid != copy.UID || at.generation != copy.Generation {
		return "", false
	}
	return at.digest, true
}

// Record remembers that copy, on cluster, contains the desired spec of SpecHash digest: it
// was compared whole, or it is what the member answered to the hub's apply.
func (c *Covered) Record(cluster string, copy *rayv1.RayService, digest string) {
	if copy == nil || copy.UID == "" || digest == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.copies[coveredKey{cluster, types.NamespacedName{Namespace: copy.Namespace, Name: copy.Name}}] = coveredAt{
		uid: copy.UID, generation: copy.Generation, digest: digest,
	}
}

// Forget drops what is remembered of the copy key on cluster (deleted, or its RayService
// gone).
func (c *Covered) Forget(cluster string, key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.copies, coveredKey{cluster, key})
}

// Len is how many copies are remembered.
func (c *Covered) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.copies)
}
