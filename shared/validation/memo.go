package validation

import (
	"fmt"
	"sync"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/types"
)

// SpecMemo remembers which RayService specs passed RayServiceSpec. A RayService is reconciled
// every few seconds and its serveConfigV2 may be up to half a megabyte of YAML
// (MaxServeConfigV2Bytes, tenths of a second to parse), so a spec is validated once per
// object, generation and annotation set (annotations such as GCS fault tolerance's are
// validated with the spec), not on every pass. A spec that failed is validated again: it is
// refused before anything costly, and its error must stay current.
type SpecMemo struct {
	mu    sync.Mutex
	valid map[types.NamespacedName]specVersion
}

// specVersion is what a spec's validity depends on.
type specVersion struct {
	uid         types.UID
	generation  int64
	annotations string
}

// NewSpecMemo returns an empty SpecMemo.
func NewSpecMemo() *SpecMemo {
	return &SpecMemo{valid: map[types.NamespacedName]specVersion{}}
}

// Check is RayServiceSpec(rs), skipped when this version of rs passed before.
func (m *SpecMemo) Check(rs *rayv1.RayService) error {
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	v := specVersion{uid: rs.UID, generation: rs.Generation, annotations: fmt.Sprint(rs.Annotations)} // fmt sorts map keys
	m.mu.Lock()
	known, ok := m.valid[key]
	m.mu.Unlock()
	if ok && known == v && rs.Generation != 0 {
		return nil
	}
	if err := RayServiceSpec(rs); err != nil {
		return err
	}
	m.mu.Lock()
	m.valid[key] = v
	m.mu.Unlock()
	return nil
}

// Forget drops what is remembered of the RayService key, which is gone.
func (m *SpecMemo) Forget(key types.NamespacedName) {
	m.mu.Lock()
	delete(m.valid, key)
	m.mu.Unlock()
}
