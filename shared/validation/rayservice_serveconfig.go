package validation

import (
	"fmt"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// serveConfigPath is where a RayService keeps its Serve config.
var serveConfigPath = specPath.Child("serveConfigV2")

// yamlErrorPrefix is what sigs.k8s.io/yaml puts before the parser's own message ("yaml: line
// 3: ..."); it says nothing to a user who never asked for JSON.
const yamlErrorPrefix = "error converting YAML to JSON: "

// serveConfig checks that serveConfigV2, when set, is at most MaxServeConfigV2Bytes and is what
// the Serve REST API accepts as a declarative config: a YAML mapping, whose "applications", if
// present, is a list. KubeRay
// finds out only when it converts the config for submission, once a cluster is up; here a
// typo is reported when the RayService is applied. The config itself is never echoed in the
// error: it can be large, and the parser's line number points at the problem.
func serveConfig(rs *rayv1.RayService) error {
	config := rs.Spec.ServeConfigV2
	if err := serveConfigSize(config); err != nil {
		return err
	}
	if strings.TrimSpace(config) == "" {
		return nil
	}
	// The parser bounds alias expansion (a document mostly made of expanded anchors, a "billion
	// laughs", fails with "excessive aliasing"), and the size check bounds the rest.
	var doc any
	if err := yaml.Unmarshal([]byte(config), &doc); err != nil {
		return field.Invalid(serveConfigPath, field.OmitValueType{},
			"is not valid YAML: "+strings.TrimPrefix(err.Error(), yamlErrorPrefix))
	}
	mapping, ok := doc.(map[string]any)
	if !ok {
		got := yamlKind(doc)
		if doc == nil {
			got = "a document with no content"
		}
		return field.Invalid(serveConfigPath, field.OmitValueType{}, fmt.Sprintf(
			"must be a YAML mapping (a Serve config with an \"applications\" list), got %s", got))
	}
	if apps, present := mapping["applications"]; present {
		if _, isList := apps.([]any); !isList {
			return field.Invalid(serveConfigPath.Key("applications"), field.OmitValueType{},
				"must be a list of Serve applications, got "+yamlKind(apps))
		}
	}
	return nil
}

// yamlKind names the YAML type of a decoded value, with an article, for messages.
func yamlKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int64, int:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	default:
		return fmt.Sprintf("a %T", v)
	}
}
