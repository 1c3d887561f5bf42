package apidocs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// root is the repository root, from this package's directory.
var root = filepath.Join("..", "..", "..", "..", "..", "..")

func TestREADMEIsCurrent(t *testing.T) {
	crds, err := ReadCRDs(filepath.Join(root, "charts", "rayfleet-hub", "crds"), filepath.Join(root, "charts", "rayfleet-spoke", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	generated, err := Render(crds)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "shared", "api", "fleet", "v1alpha1", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(readme, generated)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readme, want) {
		t.Error("shared/api/fleet/v1alpha1/README.md is stale: run make api-docs")
	}
	for _, field := range []string{"`spec.failover.purgeMode`", "`status.rollout.blueGreen.greenPercent`", "`spec.serveAddresses.cidrs`", "`status.capacity.free`"} {
		if !bytes.Contains(generated, []byte(field)) {
			t.Errorf("the reference lacks %s", field)
		}
	}
}

func TestTypeOf(t *testing.T) {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	obj := func(keys ...string) apiextensionsv1.JSONSchemaProps {
		s := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, k := range keys {
			s.Properties[k] = str
		}
		return s
	}
	list := func(item apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
		return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &item}}
	}
	preserve := true
	for _, tc := range []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		want   string
	}{
		{"string", str, "string"},
		{"time", apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}, "time"},
		{"int32", apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}, "int32"},
		{"int or string", apiextensionsv1.JSONSchemaProps{XIntOrString: true}, "int or string"},
		{"free-form", apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}, "any"},
		{"string list", list(str), "[]string"},
		{"map", apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &str}}, "map[string]string"},
		{"label selector", obj("matchLabels", "matchExpressions"), "LabelSelector"},
		{"conditions", list(obj("type", "status", "reason", "message", "lastTransitionTime", "observedGeneration")), "[]Condition"},
		{"tolerations", list(obj("key", "operator", "value", "effect", "tolerationSeconds")), "[]Toleration"},
		{"an object with one more field than a selector", obj("matchLabels", "matchExpressions", "x"), "object"},
	} {
		if got := typeOf(tc.schema); got != tc.want {
			t.Errorf("%s: typeOf = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSplice(t *testing.T) {
	readme := "# API\n\nby hand\n\n" + Begin + "\nold\n" + End + "\n\nafter\n"
	got, err := Splice([]byte(readme), []byte("new\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "# API\n\nby hand\n\n" + Begin + "\nnew\n" + End + "\n\nafter\n"; string(got) != want {
		t.Errorf("Splice = %q, want %q", got, want)
	}
	if _, err := Splice([]byte("# API\n"), []byte("new\n")); err == nil || !strings.Contains(err.Error(), "needs a line") {
		t.Errorf("Splice without markers: err = %v, want one naming the markers", err)
	}
}

func TestRenderWantsEveryKind(t *testing.T) {
	if _, err := Render(nil); err == nil {
		t.Error("Render of no CRDs: want an error")
	}
}
