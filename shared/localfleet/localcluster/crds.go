package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rayfleet/rayfleet/shared/labels"
)

// chartCRDDir is where `make manifests` puts the CRDs the spoke chart installs.
const chartCRDDir = "charts/rayfleet-spoke/crds"

// gatewayAPICRDDir holds the Gateway API CRDs (standard channel) a member needs for
// incremental RayService upgrades.
const gatewayAPICRDDir = "e2e/testdata/gateway-api"

// rayAPIPackage is the Go package the ray.io/v1 CRDs are generated from.
const rayAPIPackage = "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"

// SpokeCRDDir returns the directory of the CRDs a member cluster needs: the chart's generated
// CRDs when `make manifests` has produced them, otherwise ray.io/v1 CRDs generated here with
// controller-gen from BinDir into a per-version cache (a stop-gap for development).
func SpokeCRDDir(binDir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	chart := filepath.Join(root, chartCRDDir)
	if hasRayClusterCRD(chart) {
		return chart, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the cache dir: %w", err)
	}
	dir := filepath.Join(cache, "rayfleet", "e2e-crds", "kuberay-"+labels.KubeRayVersionValue)
	if hasRayClusterCRD(dir) {
		return dir, nil
	}
	if binDir == "" {
		binDir = DefaultBinDir()
	}
	if err = os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("creating CRD cache: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "gen-")
	if err != nil {
		return "", fmt.Errorf("creating CRD cache: %w", err)
	}
	cmd := exec.Command(filepath.Join(binDir, "controller-gen"),
		"crd:maxDescLen=0,generateEmbeddedObjectMeta=true,allowDangerousTypes=true",
		"paths="+rayAPIPackage, "output:crd:dir="+tmp)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("generating ray.io CRDs: %w\n%s", err, out)
	}
	// Rename is atomic: a concurrent generator either wins or finds the directory complete.
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		if !hasRayClusterCRD(dir) {
			return "", fmt.Errorf("storing generated CRDs in %s: %w", dir, err)
		}
	}
	return dir, nil
}

// GatewayAPICRDDir returns the directory of the Gateway API CRDs in the repository.
func GatewayAPICRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, gatewayAPICRDDir)
	if files, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); len(files) == 0 {
		return "", fmt.Errorf("no Gateway API CRDs in %s", dir)
	}
	return dir, nil
}

func hasRayClusterCRD(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil && bytes.Contains(data, []byte("rayclusters.ray.io")) {
			return true
		}
	}
	return false
}

// installCRDs creates every CustomResourceDefinition found in Options.CRDDirs and waits until
// each is Established.
func (c *Cluster) installCRDs(ctx context.Context) error {
	var crds []*unstructured.Unstructured
	for _, dir := range c.opts.CRDDirs {
		found, err := readCRDs(dir)
		if err != nil {
			return err
		}
		crds = append(crds, found...)
	}
	for _, crd := range crds {
		if err := c.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.GetName(), err)
		}
	}
	for _, crd := range crds {
		if err := c.waitEstablished(ctx, crd.GetName()); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) waitEstablished(ctx context.Context, name string) error {
	return wait.PollUntilContextTimeout(ctx, pollInterval, startTimeout, true, func(ctx context.Context) (bool, error) {
		crd := &unstructured.Unstructured{}
		crd.SetAPIVersion("apiextensions.k8s.io/v1")
		crd.SetKind("CustomResourceDefinition")
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return false, nil //nolint:nilerr // not visible yet; keep polling until the timeout
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		for _, cond := range conds {
			m, ok := cond.(map[string]any)
			if ok && m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
}

// readCRDs parses every YAML document in dir's *.yaml files and keeps the CRDs.
func readCRDs(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRD files in %s", dir)
	}
	var crds []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", f, err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, fmt.Errorf("decoding %s: %w", f, err)
			}
			if obj.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(obj.GetAPIVersion(), "apiextensions.k8s.io/") {
				crds = append(crds, obj)
			}
		}
	}
	return crds, nil
}
