package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestSourceDateEpoch(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr bool
	}{
		{in: "", want: time.Time{}},
		{in: "0", want: time.Unix(0, 0).UTC()},
		{in: "1795804503", want: time.Unix(1795804503, 0).UTC()},
		{in: "-1", wantErr: true},
		{in: "yesterday", wantErr: true},
	}
	for _, tt := range tests {
		got, err := sourceDateEpoch(tt.in)
		if (err != nil) != tt.wantErr || !got.Equal(tt.want) {
			t.Errorf("sourceDateEpoch(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// TestRun builds one real static binary (pause, the smallest) and uses it as all four, so the
// tool runs end to end: both tarballs written, each readable under its tag.
func TestRun(t *testing.T) {
	bin, out := t.TempDir(), t.TempDir()
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(bin, "pause"), "../pause")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	for _, n := range []string{"hub", "spoke", "rayfleet"} {
		if err := os.Link(filepath.Join(bin, "pause"), filepath.Join(bin, n)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("SOURCE_DATE_EPOCH", "1795804503")
	args := []string{"-bin", bin, "-out", out, "-image", "example.com/rayfleet:v1", "-pause-image", "example.com/pause:v1", "-ca-certs", filepath.Join(bin, "missing.crt")}
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	for file, ref := range map[string]string{"rayfleet.tar": "example.com/rayfleet:v1", "pause.tar": "example.com/pause:v1"} {
		tag, err := name.NewTag(ref)
		if err != nil {
			t.Fatal(err)
		}
		img, err := tarball.ImageFromPath(filepath.Join(out, file), &tag)
		if err != nil {
			t.Fatalf("%s under %s: %v", file, ref, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if want := time.Unix(1795804503, 0); !cf.Created.Equal(want) {
			t.Errorf("%s created %v, want SOURCE_DATE_EPOCH's %v", file, cf.Created, want)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("out holds %d files, want the two tarballs and no temporary file", len(entries))
	}
}

func TestRunRejects(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     string
		wantErr string
	}{
		{name: "extra argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "bad epoch", env: "soon", wantErr: "SOURCE_DATE_EPOCH"},
		{name: "missing binaries", args: []string{"-bin", "/nonexistent", "-out", "OUT"}, wantErr: "no such file"},
		{name: "bad image name", args: []string{"-image", "Not A Name"}, wantErr: `image name "Not A Name"`},
		{name: "image without a tag", args: []string{"-image", "example.com/rayfleet"}, wantErr: "image name"},
		{name: "bad pause image name", args: []string{"-pause-image", "x:y:z"}, wantErr: `image name "x:y:z"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SOURCE_DATE_EPOCH", tt.env)
			args := tt.args
			for i, a := range args {
				if a == "OUT" {
					args[i] = t.TempDir()
				}
			}
			err := run(args)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("run(%q) error = %v, want one containing %q", args, err, tt.wantErr)
			}
		})
	}
}
