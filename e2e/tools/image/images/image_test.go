package images

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// file is what a test checks of one entry of an image's filesystem.
type file struct {
	Mode     int64
	Dir      bool
	UID, GID int
	ModTime  time.Time
	Content  string
}

// filesystem flattens img's layers into its filesystem, by path.
func filesystem(t *testing.T, img v1.Image) map[string]file {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]file{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(hdr.Name, "/")] = file{
			Mode: hdr.Mode, Dir: hdr.Typeflag == tar.TypeDir, UID: hdr.Uid, GID: hdr.Gid,
			ModTime: hdr.ModTime.UTC(), Content: string(content),
		}
	}
}

// executableBy reports whether a process running as uid:gid (no supplementary groups) may
// execute f, by the Unix permission rules.
func executableBy(f file, uid, gid int) bool {
	switch {
	case f.Dir:
		return false
	case uid == 0:
		return f.Mode&0o111 != 0
	case f.UID == uid:
		return f.Mode&0o100 != 0
	case f.GID == gid:
		return f.Mode&0o010 != 0
	}
	return f.Mode&0o001 != 0
}

type fakeBins struct{ hub, spoke, cli, pause string }

func newFakeBins(t *testing.T) fakeBins {
	dir := t.TempDir()
	return fakeBins{
		hub:   fakeELF(t, dir, "hub", elf.EM_X86_64, false, "hub code"),
		spoke: fakeELF(t, dir, "spoke", elf.EM_X86_64, false, "spoke code"),
		cli:   fakeELF(t, dir, "rayfleet", elf.EM_X86_64, false, "cli code"),
		pause: fakeELF(t, dir, "pause", elf.EM_X86_64, false, "pause code"),
	}
}

var testBuild = Build{
	Version:  "v1.2.3",
	Revision: "0123456789abcdef0123456789abcdef01234567",
	Source:   "https://github.com/rayfleet/rayfleet",
	Created:  time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC),
}

func TestRayfleetLayout(t *testing.T) {
	bins := newFakeBins(t)
	img, err := Rayfleet(testBuild, bins.hub, bins.spoke, bins.cli, []byte("PEM"))
	if err != nil {
		t.Fatal(err)
	}
	created := testBuild.Created
	read := func(p string) string { return mustRead(t, p) }
	want := map[string]file{
		"etc":                               {Mode: 0o755, Dir: true, ModTime: created},
		"etc/passwd":                        {Mode: 0o644, ModTime: created, Content: "root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"},
		"etc/group":                         {Mode: 0o644, ModTime: created, Content: "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n"},
		"etc/ssl":                           {Mode: 0o755, Dir: true, ModTime: created},
		"etc/ssl/certs":                     {Mode: 0o755, Dir: true, ModTime: created},
		"etc/ssl/certs/ca-certificates.crt": {Mode: 0o644, ModTime: created, Content: "PEM"},
		"home":                              {Mode: 0o755, Dir: true, ModTime: created},
		"home/nonroot":                      {Mode: 0o700, Dir: true, UID: 65532, GID: 65532, ModTime: created},
		"root":                              {Mode: 0o700, Dir: true, ModTime: created},
		"tmp":                               {Mode: 0o1777, Dir: true, ModTime: created},
		"hub":                               {Mode: 0o755, ModTime: created, Content: read(bins.hub)},
		"spoke":                             {Mode: 0o755, ModTime: created, Content: read(bins.spoke)},
		"rayfleet":                          {Mode: 0o755, ModTime: created, Content: read(bins.cli)},
	}
	got := filesystem(t, img)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("filesystem (-want +got):\n%s", diff)
	}
	// What the charts run (command /hub or /spoke, runAsUser and runAsGroup 65532) must be
	// executable by that user, and the CLI too.
	for _, p := range []string{"hub", "spoke", "rayfleet"} {
		if !executableBy(got[p], NonRoot, NonRoot) {
			t.Errorf("/%s (mode %o, %d:%d) is not executable by %d", p, got[p].Mode, got[p].UID, got[p].GID, NonRoot)
		}
	}

	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	wantConfig := v1.Config{
		User:       "65532:65532",
		WorkingDir: "/home/nonroot",
		Cmd:        []string{"/rayfleet", "version"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels: map[string]string{
			LabelTitle:    "rayfleet",
			LabelVersion:  "v1.2.3",
			LabelRevision: "0123456789abcdef0123456789abcdef01234567",
			LabelSource:   "https://github.com/rayfleet/rayfleet",
		},
	}
	if diff := cmp.Diff(wantConfig, cf.Config); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Equal(created) {
		t.Errorf("config platform %s/%s created %v, want linux/amd64 created %v", cf.OS, cf.Architecture, cf.Created, created)
	}
	if len(cf.History) != 2 || len(cf.RootFS.DiffIDs) != 2 {
		t.Errorf("history %v and diff IDs %v: want one of each per layer (base, binaries)", cf.History, cf.RootFS.DiffIDs)
	}
	checkOCI(t, img)
}

// checkOCI checks that img is an OCI image throughout: manifest, config and layer media types.
func checkOCI(t *testing.T, img v1.Image) {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s with config %s, want OCI media types", m.MediaType, m.Config.MediaType)
	}
	for _, l := range m.Layers {
		if l.MediaType != types.OCILayer {
			t.Errorf("layer %s has media type %s, want %s", l.Digest, l.MediaType, types.OCILayer)
		}
	}
}

func TestRayfleetWithoutCACerts(t *testing.T) {
	bins := newFakeBins(t)
	img, err := Rayfleet(Build{}, bins.hub, bins.spoke, bins.cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := filesystem(t, img)
	if _, ok := got["etc/ssl"]; ok {
		t.Error("etc/ssl is in the image without a CA bundle")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	// No build time: the epoch, still fixed; no version: only the title label.
	if epoch := time.Unix(0, 0); !cf.Created.Equal(epoch) || !got["hub"].ModTime.Equal(epoch) {
		t.Errorf("created %v, /hub modified %v; want the Unix epoch", cf.Created, got["hub"].ModTime)
	}
	if diff := cmp.Diff(map[string]string{LabelTitle: "rayfleet"}, cf.Config.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

func TestPauseLayout(t *testing.T) {
	bins := newFakeBins(t)
	img, err := Pause(testBuild, bins.pause)
	if err != nil {
		t.Fatal(err)
	}
	got := filesystem(t, img)
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"pause"}) {
		t.Errorf("pause image holds %v, want only pause", keys)
	}
	if !executableBy(got["pause"], PauseUser, PauseUser) {
		t.Errorf("/pause (mode %o) is not executable by %d", got["pause"].Mode, PauseUser)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65535:65535" || !slices.Equal(cf.Config.Entrypoint, []string{"/pause"}) || cf.Config.Cmd != nil {
		t.Errorf("pause config user %q entrypoint %q cmd %q, want 65535:65535 [/pause] none", cf.Config.User, cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if cf.Config.Labels[LabelTitle] != "rayfleet-pause" || cf.Config.Labels[LabelVersion] != "v1.2.3" {
		t.Errorf("pause labels %v", cf.Config.Labels)
	}
	checkOCI(t, img)
}

// writeTarball writes img tagged ref to a file in dir and returns the file's path and bytes.
func writeTarball(t *testing.T, dir, ref string, img v1.Image) (string, []byte) {
	t.Helper()
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err = tarball.Write(tag, img, &buf); err != nil {
		t.Fatal(err)
	}
	p, err := os.CreateTemp(dir, "*.tar")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return p.Name(), buf.Bytes()
}

func TestReproducible(t *testing.T) {
	bins := newFakeBins(t)
	build := func(b Build) (v1.Image, v1.Hash) {
		img, err := Rayfleet(b, bins.hub, bins.spoke, bins.cli, []byte("PEM"))
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return img, d
	}
	img1, d1 := build(testBuild)
	img2, d2 := build(testBuild)
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: digests %s and %s", d1, d2)
	}
	dir := t.TempDir()
	_, tar1 := writeTarball(t, dir, "ghcr.io/rayfleet/rayfleet:v1.2.3", img1)
	_, tar2 := writeTarball(t, dir, "ghcr.io/rayfleet/rayfleet:v1.2.3", img2)
	if !bytes.Equal(tar1, tar2) {
		t.Error("two builds of the same inputs wrote different tarballs")
	}

	later := testBuild
	later.Created = testBuild.Created.Add(time.Second)
	if _, d := build(later); d == d1 {
		t.Errorf("a different build time gave the same digest %s: the time is not in the image", d)
	}
	if err := os.WriteFile(bins.hub, append([]byte(mustRead(t, bins.hub)), 'x'), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, d := build(testBuild); d == d1 {
		t.Errorf("a changed /hub gave the same digest %s", d)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTarballReadBack reads the written tarball back as docker load and ctr import would find
// it: under its tag, with the same config and layers, and /hub, /spoke and /rayfleet in it.
func TestTarballReadBack(t *testing.T) {
	bins := newFakeBins(t)
	img, err := Rayfleet(testBuild, bins.hub, bins.spoke, bins.cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "ghcr.io/rayfleet/rayfleet:v1.2.3"
	p, _ := writeTarball(t, t.TempDir(), ref, img)
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(p, &tag)
	if err != nil {
		t.Fatalf("read %s back: %v", ref, err)
	}
	for _, get := range []func(v1.Image) (v1.Hash, error){
		(v1.Image).ConfigName,
		func(i v1.Image) (v1.Hash, error) { ls, err := i.Layers(); return lastDiffID(ls, err) },
	} {
		want, err1 := get(img)
		got, err2 := get(back)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("read back %s, built %s", got, want)
		}
	}
	files := filesystem(t, back)
	for _, p := range []string{"hub", "spoke", "rayfleet"} {
		if !executableBy(files[p], NonRoot, NonRoot) {
			t.Errorf("read back: /%s (%+v) is not executable by %d", p, files[p], NonRoot)
		}
	}
}

func lastDiffID(ls []v1.Layer, err error) (v1.Hash, error) {
	if err != nil || len(ls) == 0 {
		return v1.Hash{}, errors.Join(err, errors.New("no layers"))
	}
	return ls[len(ls)-1].DiffID()
}

func TestLayerRejects(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
		wantErr string
	}{
		{name: "absolute path", entries: []Entry{{Path: "/etc", Mode: dir755}}, wantErr: "must be relative"},
		{name: "escapes the root", entries: []Entry{{Path: "../x", Mode: 0o644}}, wantErr: "must be relative"},
		{name: "unclean", entries: []Entry{{Path: "etc//passwd", Mode: 0o644}}, wantErr: "must be relative"},
		{name: "empty", entries: []Entry{{Mode: 0o644}}, wantErr: "must be relative"},
		{name: "twice", entries: []Entry{{Path: "a", Mode: 0o644}, {Path: "a", Mode: 0o644}}, wantErr: "appears twice"},
		{name: "symlink", entries: []Entry{{Path: "a", Mode: fs.ModeSymlink | 0o777}}, wantErr: "only directories and regular files"},
		{name: "directory with content", entries: []Entry{{Path: "a", Mode: dir755, Data: []byte("x")}}, wantErr: "directory with content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Layer(tt.entries, time.Time{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Layer() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLayerSourceNotRegular(t *testing.T) {
	l, err := Layer([]Entry{{Path: "hub", Mode: 0o755, Source: t.TempDir()}}, time.Time{})
	if err == nil {
		_, err = l.Digest()
	}
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("a directory as a binary's source: error %v, want one saying it is not a regular file", err)
	}
}

func TestImageNeedsPlatform(t *testing.T) {
	if _, err := Image(Spec{}); err == nil {
		t.Fatal("Image without a platform: no error")
	}
}

func TestImageRejectsDynamicBinary(t *testing.T) {
	bins := newFakeBins(t)
	dyn := fakeELF(t, filepath.Dir(bins.hub), "dyn", elf.EM_X86_64, true, "")
	if _, err := Rayfleet(testBuild, dyn, bins.spoke, bins.cli, nil); err == nil || !strings.Contains(err.Error(), "dynamically linked") {
		t.Fatalf("dynamic /hub: error %v, want one saying it is dynamically linked", err)
	}
	if _, err := Pause(testBuild, dyn); err == nil {
		t.Fatal("dynamic /pause: no error")
	}
}
