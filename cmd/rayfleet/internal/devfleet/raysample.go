package devfleet

import (
	_ "embed" // the sample's policy is a YAML file users can read
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/rayfleet/rayfleet/shared/localfleet/rayapp"
)

// raySampleYAML is the Ray sample without its Ray parts, which LoadRaySample fills in.
//
//go:embed ray-sample.yaml
var raySampleYAML []byte

// raySampleVersion is the version the Ray sample's Serve app answers with.
const raySampleVersion = "v1"

// LoadRaySample is the sample of `dev up --ray`: ray-sample.yaml with the versioned Serve app
// of shared/localfleet/rayapp on a Ray head of image, and its ConfigMap for the members.
func LoadRaySample(image string) (*Sample, error) {
	s, err := parseSample(raySampleYAML)
	if err != nil {
		return nil, err
	}
	if s.Service == nil {
		return nil, s.check()
	}
	s.Service.Spec.ServeConfigV2 = rayapp.ServeConfig(raySampleVersion)
	s.Service.Spec.RayClusterSpec = rayapp.ClusterSpec(image)
	s.MemberConfigMap = rayapp.ConfigMap(s.Namespace())
	if err = s.check(); err != nil {
		return nil, err
	}
	if s.source, err = completedSource(s); err != nil {
		return nil, err
	}
	return s, nil
}

// completedSource is ray-sample.yaml's comments and the completed objects, as the copy in the
// state directory: what is on the hub, to edit and re-apply.
func completedSource(s *Sample) ([]byte, error) {
	out := append([]byte{}, leadingComments(raySampleYAML)...)
	for i, obj := range []any{s.Policy, s.Service} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encoding the Ray sample: %w", err)
		}
		var m map[string]any
		if err = yaml.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("encoding the Ray sample: %w", err)
		}
		delete(m, "status") // what the hub writes
		if data, err = yaml.Marshal(pruneEmpty(m)); err != nil {
			return nil, fmt.Errorf("encoding the Ray sample: %w", err)
		}
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, data...)
	}
	return out, nil
}

// pruneEmpty drops the nulls and empty objects that encoding a Go object adds
// (creationTimestamp, a Service's status), so that the copy reads like a hand-written sample. An empty object that
// means something (emptyDir: {}) would go too: TestRaySampleCopyReapplies would catch it.
func pruneEmpty(m map[string]any) map[string]any {
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = pruneEmpty(sub)
		}
		if list, ok := v.([]any); ok {
			for i, item := range list {
				if sub, ok := item.(map[string]any); ok {
					list[i] = pruneEmpty(sub)
				}
			}
		}
		if sub, ok := v.(map[string]any); v == nil || (ok && len(sub) == 0) {
			delete(m, k)
		}
	}
	return m
}

// leadingComments is data's comment lines before its first other line.
func leadingComments(data []byte) []byte {
	i := 0
	for i < len(data) && data[i] == '#' {
		for i < len(data) && data[i] != '\n' {
			i++
		}
		i = min(i+1, len(data))
	}
	return data[:i]
}
