package fleet

import (
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
)

// validations remembers, per hub RayService, the spec validation outcome of its last
// generation.
type validations struct {
	mu   sync.Mutex
	seen map[types.NamespacedName]validated
}

// validated is one RayService's remembered outcome.
type validated struct {
	uid        types.UID
	generation int64
	err        error
}

func newValidations() *validations {
	return &validations{seen: map[types.NamespacedName]validated{}}
}

// check returns the remembered outcome for rs's UID and generation, or runs validate and
// remembers its outcome. A generation of 0 (an object not from the API server) is never
// remembered.
func (v *validations) check(rs *rayv1.RayService, validate func() error) error {
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	v.mu.Lock()
	prev, ok := v.seen[key]
	v.mu.Unlock()
	if ok && prev.uid == rs.UID && prev.generation == rs.Generation && rs.Generation != 0 {
		return prev.err
	}
	err := validate()
	v.mu.Lock()
	v.seen[key] = validated{uid: rs.UID, generation: rs.Generation, err: err}
	v.mu.Unlock()
	return err
}

// forget drops what is remembered of a RayService that is gone.
func (v *validations) forget(key types.NamespacedName) {
	v.mu.Lock()
	delete(v.seen, key)
	v.mu.Unlock()
}
