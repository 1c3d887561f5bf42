package rayapp

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestConfigMapHoldsTheApps(t *testing.T) {
	cm := ConfigMap("demo")
	if cm.Namespace != "demo" || cm.Name != ConfigMapName {
		t.Fatalf("ConfigMap %s/%s, want demo/%s", cm.Namespace, cm.Name, ConfigMapName)
	}
	for file, want := range map[string]string{"versioned.py": "def build(", "broken.py": BrokenMessage} {
		if !strings.Contains(cm.Data[file], want) {
			t.Errorf("%s: want it to contain %q, got %q", file, want, cm.Data[file])
		}
	}
}

func TestServeConfigRunsTheVersionedApp(t *testing.T) {
	var got struct {
		Applications []struct {
			Name       string            `json:"name"`
			ImportPath string            `json:"import_path"`
			Args       map[string]string `json:"args"`
		} `json:"applications"`
	}
	if err := yaml.Unmarshal([]byte(ServeConfig("v7")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Applications) != 1 || got.Applications[0].ImportPath != "versioned:build" || got.Applications[0].Args["version"] != "v7" {
		t.Fatalf("ServeConfig(v7) = %+v", got)
	}
}

func TestClusterSpecMountsTheConfigMap(t *testing.T) {
	spec := ClusterSpec("img")
	pod := spec.HeadGroupSpec.Template.Spec
	if pod.Containers[0].Image != "img" || pod.Volumes[0].ConfigMap.Name != ConfigMapName {
		t.Fatalf("head %+v", pod)
	}
}
