package simmembers

import (
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// outPatch rewrites patch data computed on the member's view of an object into the backing
// server's names: a metadata.namespace (namespaced kinds) or metadata.name (cluster-scoped
// kinds) in the patch, and for a cluster-scoped kind MemberLabel wherever the patch sets the
// labels, so that the object stays in its member's cache. Merge, strategic-merge and apply
// patches are JSON objects; JSON patches are lists of operations.
func (m member) outPatch(pt types.PatchType, data []byte, namespaced bool) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		return m.outJSONPatch(data, namespaced)
	case types.MergePatchType, types.StrategicMergePatchType, types.ApplyPatchType, types.ApplyCBORPatchType:
		if pt == types.ApplyCBORPatchType {
			return nil, fmt.Errorf("simulated member %s: CBOR apply patches are not mapped", m.name)
		}
		return m.outObjectPatch(data, namespaced)
	default:
		return nil, fmt.Errorf("simulated member %s: patch type %q is not mapped", m.name, pt)
	}
}

// outObjectPatch rewrites a patch that is a (partial) object.
func (m member) outObjectPatch(data []byte, namespaced bool) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("simulated member %s: decoding patch: %w", m.name, err)
	}
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		if namespaced {
			return data, nil
		}
		md = map[string]any{}
		obj["metadata"] = md
	}
	if namespaced {
		if ns, ok := md["namespace"].(string); ok {
			md["namespace"] = m.out(ns)
		}
		return json.Marshal(obj)
	}
	if name, ok := md["name"].(string); ok {
		md["name"] = m.out(name)
	}
	// A patch that leaves the labels alone keeps the label; one that sets them (even to null,
	// which would drop every label) keeps it too.
	if v, present := md["labels"]; present {
		lbls, _ := v.(map[string]any)
		if lbls == nil {
			lbls = map[string]any{}
		}
		lbls[MemberLabel] = m.name
		md["labels"] = lbls
	}
	return json.Marshal(obj)
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// memberLabelPath is MemberLabel's JSON pointer.
var memberLabelPath = "/metadata/labels/" + strings.ReplaceAll(strings.ReplaceAll(MemberLabel, "~", "~0"), "/", "~1")

// outJSONPatch rewrites the operations on metadata.namespace or metadata.name, keeps
// MemberLabel in a replaced label map and drops operations that would remove it.
func (m member) outJSONPatch(data []byte, namespaced bool) ([]byte, error) {
	var ops []jsonPatchOp
	if err := json.Unmarshal(data, &ops); err != nil {
		return nil, fmt.Errorf("simulated member %s: decoding JSON patch: %w", m.name, err)
	}
	out := ops[:0]
	for _, op := range ops {
		field := "/metadata/name"
		if namespaced {
			field = "/metadata/namespace"
		}
		switch {
		case op.Path == field && (op.Op == "add" || op.Op == "replace" || op.Op == "test"):
			var s string
			if err := json.Unmarshal(op.Value, &s); err != nil {
				return nil, fmt.Errorf("simulated member %s: JSON patch value of %s: %w", m.name, op.Path, err)
			}
			v, err := json.Marshal(m.out(s))
			if err != nil {
				return nil, err
			}
			op.Value = v
		case !namespaced && op.Path == memberLabelPath && op.Op == "remove":
			continue
		case !namespaced && op.Path == "/metadata/labels" && (op.Op == "add" || op.Op == "replace"):
			lbls := map[string]string{}
			if err := json.Unmarshal(op.Value, &lbls); err != nil {
				return nil, fmt.Errorf("simulated member %s: JSON patch value of %s: %w", m.name, op.Path, err)
			}
			lbls[MemberLabel] = m.name
			v, err := json.Marshal(lbls)
			if err != nil {
				return nil, err
			}
			op.Value = v
		}
		out = append(out, op)
	}
	return json.Marshal(out)
}
