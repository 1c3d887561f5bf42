package images

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRayUsesTheLayerAsItIs builds the Ray image from a small gzip'd root filesystem: its one
// layer is that file, byte for byte (so a rebuild compresses nothing), and its config carries
// the environment and labels the real-Node tests rely on.
func TestRayUsesTheLayerAsItIs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "layer.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	content := []byte("#!/bin/sh\n")
	for _, h := range []*tar.Header{
		{Name: "opt/ray/bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "opt/ray/bin/ray", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(content))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write(content); err != nil {
		t.Fatal(err)
	}
	for _, c := range []interface{ Close() error }{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}

	img, err := Ray(testBuild, path, "2.52.0")
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers = %d, %v; want one", len(layers), err)
	}
	digest, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256File(t, path); digest.Hex != want {
		t.Errorf("layer digest %s, want the file's own sha256 %s", digest.Hex, want)
	}
	got := filesystem(t, img)
	if got["opt/ray/bin/ray"].Content != string(content) {
		t.Errorf("opt/ray/bin/ray = %q, want the layer's", got["opt/ray/bin/ray"].Content)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != runtime.GOARCH || cf.OS != "linux" {
		t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if !slices.Equal(cf.Config.Env, RayEnv) {
		t.Errorf("env %q, want %q", cf.Config.Env, RayEnv)
	}
	wantLabels := map[string]string{
		LabelTitle: "rayfleet-ray", LabelVersion: testBuild.Version, LabelRevision: testBuild.Revision,
		LabelSource: testBuild.Source, "io.ray.version": "2.52.0",
	}
	if diff := cmp.Diff(wantLabels, cf.Config.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

func TestRayMissingLayer(t *testing.T) {
	if _, err := Ray(testBuild, filepath.Join(t.TempDir(), "nope.tar.gz"), "2.52.0"); err == nil {
		t.Fatal("Ray() with a missing layer succeeded")
	}
}

func sha256File(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}
