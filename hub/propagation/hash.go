package propagation

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
)

// SpecHash is a stable hash of a RayService spec: the hex SHA-256 of its JSON encoding, all 64
// characters (it is kept in an annotation, which has no 63-character limit; displays may
// shorten it). encoding/json writes struct fields in declaration order and map keys sorted, so
// equal specs hash equally whatever order their maps were built in.
func SpecHash(spec *rayv1.RayServiceSpec) (string, error) {
	if spec == nil {
		return "", errors.New("hashing RayService spec: spec is nil")
	}
	return JSONHash("RayService spec", spec)
}

// JSONHash is SpecHash's scheme for any value encoding/json encodes (a hub RayService's
// revision is hashed with it too), so the hub keeps one kind of hash; what names the value in
// the error.
func JSONHash(what string, v any) (string, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("hashing %s: %w", what, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
