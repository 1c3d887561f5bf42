// Package images builds RayFleet's container images without a Docker daemon or a registry: the
// rayfleet image the charts run (/hub, /spoke and /rayfleet on a base the project writes itself)
// and the pause image a Node's Pod sandboxes hold. Images are reproducible: equal inputs give
// equal digests. It is the library of e2e/tools/image, which `make image` runs.
package images

import (
	"fmt"
	"io/fs"
	"maps"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The OCI annotation keys the images carry as labels
// (https://github.com/opencontainers/image-spec/blob/main/annotations.md).
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelTitle    = "org.opencontainers.image.title"
)

// Build describes one build: where its images come from and when.
type Build struct {
	// Version, Revision and Source become the OCI labels (Version as `rayfleet version` prints it,
	// Revision the commit, Source the repository URL); empty ones are left out.
	Version, Revision, Source string
	// Created stamps the config, the history and every file, so a rebuild of the same inputs has
	// the same digest (SOURCE_DATE_EPOCH; the zero value is the Unix epoch).
	Created time.Time
}

func (b Build) created() time.Time {
	if b.Created.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return b.Created.UTC()
}

func (b Build) labels(title string) map[string]string {
	l := map[string]string{LabelTitle: title}
	for k, v := range map[string]string{LabelSource: b.Source, LabelVersion: b.Version, LabelRevision: b.Revision} {
		if v != "" {
			l[k] = v
		}
	}
	return l
}

// Spec is what an image holds and how it runs.
type Spec struct {
	Platform v1.Platform
	// Layers, bottom first, each with the history line `docker history` shows for it.
	Layers []SpecLayer
	// The config's runtime settings.
	User       string
	WorkingDir string
	Entrypoint []string
	Cmd        []string
	Env        []string
	Labels     map[string]string
	Created    time.Time
}

// SpecLayer is one layer of a Spec: Entries, or a layer built elsewhere (Prebuilt).
type SpecLayer struct {
	Entries   []Entry
	Prebuilt  v1.Layer
	CreatedBy string
}

// Image assembles an OCI image (OCI manifest and config media types) from a spec.
func Image(s Spec) (v1.Image, error) {
	if s.Platform.OS == "" || s.Platform.Architecture == "" {
		return nil, fmt.Errorf("image platform %q/%q: OS and architecture are required", s.Platform.OS, s.Platform.Architecture)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	adds := make([]mutate.Addendum, 0, len(s.Layers))
	for _, sl := range s.Layers {
		l := sl.Prebuilt
		if l == nil {
			var err error
			if l, err = Layer(sl.Entries, s.Created); err != nil {
				return nil, err
			}
		}
		adds = append(adds, mutate.Addendum{
			Layer:     l,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: s.Created}, CreatedBy: sl.CreatedBy},
		})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = s.Platform.OS, s.Platform.Architecture, s.Platform.Variant
	cf.Created = v1.Time{Time: s.Created}
	cf.Config = v1.Config{
		User:       s.User,
		WorkingDir: s.WorkingDir,
		Entrypoint: s.Entrypoint,
		Cmd:        s.Cmd,
		Env:        s.Env,
		Labels:     maps.Clone(s.Labels),
	}
	return mutate.ConfigFile(img, cf)
}

// NonRoot is the user and group the rayfleet image runs as: distroless' nonroot, which the
// charts' securityContext (runAsUser and runAsGroup 65532) names.
const NonRoot = 65532

// Rayfleet is the image both charts run. Like the Dockerfile's, it has no entrypoint: the charts
// set the command (/hub or /spoke), `IMG /rayfleet status` runs the CLI, and a bare run prints
// the version. caCerts is the PEM bundle installed as /etc/ssl/certs/ca-certificates.crt, or nil
// for none.
func Rayfleet(b Build, hub, spoke, cli string, caCerts []byte) (v1.Image, error) {
	platform, err := Platform(hub, spoke, cli)
	if err != nil {
		return nil, err
	}
	return Image(Spec{
		Platform: platform,
		Layers: []SpecLayer{
			{Entries: BaseEntries(caCerts), CreatedBy: "rayfleet base: nonroot 65532, /tmp, CA certificates"},
			{Entries: []Entry{executable("hub", hub), executable("spoke", spoke), executable("rayfleet", cli)}, CreatedBy: "rayfleet binaries: /hub /spoke /rayfleet"},
		},
		User:       fmt.Sprintf("%d:%d", NonRoot, NonRoot),
		WorkingDir: "/home/nonroot",
		Cmd:        []string{"/rayfleet", "version"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels:     b.labels("rayfleet"),
		Created:    b.created(),
	})
}

// PauseUser is the user and group the pause image runs as, Kubernetes' own pause image's.
const PauseUser = 65535

// Pause is the sandbox image: the pause binary alone as /pause, its entrypoint, run as
// 65535:65535 like the upstream pause image, with nothing else in the filesystem.
func Pause(b Build, pause string) (v1.Image, error) {
	platform, err := Platform(pause)
	if err != nil {
		return nil, err
	}
	return Image(Spec{
		Platform:   platform,
		Layers:     []SpecLayer{{Entries: []Entry{executable("pause", pause)}, CreatedBy: "rayfleet pause: /pause"}},
		User:       fmt.Sprintf("%d:%d", PauseUser, PauseUser),
		Entrypoint: []string{"/pause"},
		Labels:     b.labels("rayfleet-pause"),
		Created:    b.created(),
	})
}

// executable installs a file from this machine at the image's root, owned by root and executable by
// everyone (the images run as non-root users).
func executable(name, src string) Entry {
	return Entry{Path: path.Clean(name), Mode: 0o755, Source: src}
}

// Directory modes of the base.
const (
	dir755  = fs.ModeDir | 0o755
	dir700  = fs.ModeDir | 0o700
	dir1777 = fs.ModeDir | fs.ModeSticky | 0o777
)

// BaseEntries is the rayfleet image's base: the users and groups (root, nonroot 65532, nobody),
// nonroot's home, a world-writable sticky /tmp and, when given, the CA bundle. Nothing else: no
// shell, no C library, no package database.
func BaseEntries(caCerts []byte) []Entry {
	entries := []Entry{
		{Path: "etc", Mode: dir755},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
				fmt.Sprintf("nonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", NonRoot, NonRoot))},
		{Path: "etc/group", Mode: 0o644, Data: []byte(
			"root:x:0:\n" +
				"nobody:x:65534:\n" +
				fmt.Sprintf("nonroot:x:%d:\n", NonRoot))},
		{Path: "home", Mode: dir755},
		{Path: "home/nonroot", Mode: dir700, UID: NonRoot, GID: NonRoot},
		{Path: "root", Mode: dir700},
		{Path: "tmp", Mode: dir1777},
	}
	if caCerts != nil {
		entries = append(entries,
			Entry{Path: "etc/ssl", Mode: dir755},
			Entry{Path: "etc/ssl/certs", Mode: dir755},
			Entry{Path: "etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: caCerts})
	}
	return entries
}
