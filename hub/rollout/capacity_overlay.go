package rollout

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/validation"
)

// targetCapacityKey is the Serve config's top-level target_capacity field.
const targetCapacityKey = "target_capacity"

// Overlay is spec with a colour's capacity applied: a copy in which each worker group named in
// replicas is its full size from set limited to that many replicas (WorkerGroupSize.Limit), and
// serveConfigV2's top-level target_capacity is targetCapacity. Only fields KubeRay applies in
// place change, so the copy keeps its cluster. The limits come from set, not from spec, so an
// overlaid spec can grow again and overlaying twice is overlaying once.
//
// The config's text is kept as written but for the one line of target_capacity (added before
// the first top-level key when missing); a config whose layout that edit cannot follow (a flow
// mapping, the value on its own line) is re-encoded whole, keys sorted and comments lost. A
// blank config stays blank: KubeRay submits none, whereas a config holding only
// target_capacity would be submitted and refused (Ray requires applications). spec is not
// modified.
func Overlay(spec *rayv1.RayServiceSpec, set CapacitySet, replicas map[string]int32, targetCapacity int32) (*rayv1.RayServiceSpec, error) {
	if spec == nil {
		return nil, fmt.Errorf("overlay capacity: no RayService spec")
	}
	if targetCapacity < 0 || targetCapacity > 100 {
		return nil, fmt.Errorf("overlay capacity: target_capacity %d is not a percent from 0 to 100", targetCapacity)
	}
	inSpec := map[string]bool{}
	for i := range spec.RayClusterSpec.WorkerGroupSpecs {
		inSpec[spec.RayClusterSpec.WorkerGroupSpecs[i].GroupName] = true
	}
	for _, name := range slices.Sorted(maps.Keys(replicas)) {
		switch _, inSet := set.Workers[name]; {
		case replicas[name] < 0:
			return nil, fmt.Errorf("overlay capacity: worker group %q: negative limit %d", name, replicas[name])
		case !inSpec[name] || !inSet:
			return nil, fmt.Errorf("overlay capacity: worker group %q is not in both the spec and its full set", name)
		}
	}
	config, err := withTargetCapacity(spec.ServeConfigV2, targetCapacity)
	if err != nil {
		return nil, fmt.Errorf("overlay capacity: serveConfigV2: %w", err)
	}
	out := spec.DeepCopy()
	out.ServeConfigV2 = config
	for i := range out.RayClusterSpec.WorkerGroupSpecs {
		g := &out.RayClusterSpec.WorkerGroupSpecs[i]
		if limit, ok := replicas[g.GroupName]; ok {
			limitGroup(g, set.Workers[g.GroupName].Size.Limit(limit))
		}
	}
	return out, nil
}

// limitGroup writes size into g, leaving a field as written (nil included) when it already
// means that value, so that an unchanged group's text does not change.
func limitGroup(g *rayv1.WorkerGroupSpec, size WorkerGroupSize) {
	g.Replicas = setCount(g.Replicas, size.Replicas, 0)
	g.MinReplicas = setCount(g.MinReplicas, size.MinReplicas, 0)
	g.MaxReplicas = setCount(g.MaxReplicas, size.MaxReplicas, math.MaxInt32) // the CRD's default
}

// setCount is p set to v; p itself when it already says v, nil when p is nil and the CRD's
// default for the field (def) is v.
func setCount(p *int32, v, def int32) *int32 {
	if ptr.Deref(p, def) == v {
		return p
	}
	return ptr.To(v)
}

// withTargetCapacity is the config text with its top-level target_capacity set to tc. The
// line edit is checked by decoding: what it gives must be the config with that one value
// changed, else the whole config is re-encoded.
func withTargetCapacity(text string, tc int32) (string, error) {
	if strings.TrimSpace(text) == "" {
		return text, nil
	}
	if len(text) > validation.MaxServeConfigV2Bytes {
		return "", tooLarge(len(text))
	}
	doc, err := decodeConfig(text)
	if err != nil {
		return "", err
	}
	doc[targetCapacityKey] = float64(tc)
	out, ok := editTargetCapacity(text, tc)
	if ok && len(out) > validation.MaxServeConfigV2Bytes {
		// Re-encoding might fit by dropping the comments: refuse rather than drop them.
		return "", fmt.Errorf("with target_capacity %d: %w", tc, tooLarge(len(out)))
	}
	if !ok || !decodesTo(out, doc) {
		b, merr := yaml.Marshal(doc)
		if merr != nil {
			return "", fmt.Errorf("re-encode with target_capacity %d: %w", tc, merr)
		}
		if out = string(b); !decodesTo(out, doc) {
			return "", fmt.Errorf("re-encoded with target_capacity %d, it no longer reads as the same config", tc)
		}
		if len(out) > validation.MaxServeConfigV2Bytes {
			return "", fmt.Errorf("re-encoded with target_capacity %d: %w", tc, tooLarge(len(out)))
		}
	}
	return out, nil
}

// decodeConfig decodes a non-blank config as KubeRay converts it, refusing one that is not a
// mapping. The caller bounds its size.
func decodeConfig(text string) (map[string]any, error) {
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var doc map[string]any
	if json.Unmarshal(js, &doc) != nil || doc == nil {
		return nil, fmt.Errorf("not a YAML mapping")
	}
	return doc, nil
}

func decodesTo(text string, want map[string]any) bool {
	got, err := decodeConfig(text)
	return err == nil && reflect.DeepEqual(got, want)
}

// editTargetCapacity rewrites the value on the top-level target_capacity line of a block
// mapping, keeping any comment after it, or adds such a line before the first top-level key.
// The top level is the indentation of the first line with content. It reports false when it
// finds no key line at all.
func editTargetCapacity(text string, tc int32) (string, bool) {
	eol := "\n"
	if strings.Contains(text, "\r\n") {
		eol = "\r\n"
	}
	lines := strings.SplitAfter(text, "\n")
	indent, first := -1, -1
	for i, line := range lines {
		content := strings.TrimRight(line, "\r\n")
		trimmed := strings.TrimLeft(content, " ")
		depth := len(content) - len(trimmed)
		if trimmed == "" || trimmed[0] == '#' {
			continue
		}
		if indent < 0 {
			if depth == 0 && (trimmed == "---" || trimmed[0] == '%') {
				continue // document start or directive
			}
			indent, first = depth, i
		}
		if depth != indent {
			continue
		}
		if rest, ok := cutTargetCapacityKey(trimmed); ok {
			lines[i] = content[:len(content)-len(rest)] + " " + strconv.Itoa(int(tc)) + trailingComment(rest) + line[len(content):]
			return strings.Join(lines, ""), true
		}
	}
	if first < 0 {
		return "", false
	}
	added := strings.Repeat(" ", indent) + targetCapacityKey + ": " + strconv.Itoa(int(tc)) + eol
	lines = slices.Insert(lines, first, added)
	return strings.Join(lines, ""), true
}

// cutTargetCapacityKey returns what follows "target_capacity:" (its key plain or quoted) on a
// line, and whether the line is that key's.
func cutTargetCapacityKey(line string) (string, bool) {
	for _, key := range []string{targetCapacityKey, `"` + targetCapacityKey + `"`, `'` + targetCapacityKey + `'`} {
		rest, ok := strings.CutPrefix(line, key)
		if !ok {
			continue
		}
		rest, ok = strings.CutPrefix(strings.TrimLeft(rest, " \t"), ":")
		if ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return rest, true
		}
	}
	return "", false
}

// trailingComment is the comment ending a value, with the blanks before it, or "".
func trailingComment(value string) string {
	for i := 1; i < len(value); i++ {
		if value[i] == '#' && (value[i-1] == ' ' || value[i-1] == '\t') {
			j := i
			for j > 0 && (value[j-1] == ' ' || value[j-1] == '\t') {
				j--
			}
			return value[j:]
		}
	}
	return ""
}
