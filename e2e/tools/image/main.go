// Command image writes RayFleet's images as tarballs that `docker load` and containerd's
// `ctr images import` read, from static binaries and without a Docker daemon or a registry:
// the rayfleet image (/hub, /spoke, /rayfleet) and the pause image. `make image` runs it.
//
//	go run ./e2e/tools/image -bin bin -out bin/images -image ghcr.io/rayfleet/rayfleet:v1 \
//	  -pause-image rayfleet.local/pause:v1 -version v1 -revision <commit>
//
// With -ray-layer it writes only the Ray image (ray.tar), from the root filesystem layer
// e2e/tools/ray-image.sh builds; `make ray-image` runs it so:
//
//	go run ./e2e/tools/image -ray-layer <layer.tar.gz> -ray-image rayfleet.local/ray:2.52.0 \
//	  -ray-version 2.52.0 -out bin/images
//
// SOURCE_DATE_EPOCH (seconds) stamps the images; unset, they carry the Unix epoch, so two builds
// of the same binaries give the same digests either way.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/rayfleet/rayfleet/e2e/tools/image/images"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	bin := fl.String("bin", "bin", "directory holding the static hub, spoke, rayfleet and pause binaries")
	out := fl.String("out", "bin/images", "directory the tarballs are written to")
	img := fl.String("image", "ghcr.io/rayfleet/rayfleet:dev", "name and tag of the rayfleet image")
	pauseImg := fl.String("pause-image", "rayfleet.local/pause:dev", "name and tag of the pause image; empty skips it")
	caCerts := fl.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle copied into the rayfleet image; empty or missing leaves it out")
	rayLayer := fl.String("ray-layer", "", "gzip'd root filesystem layer of the Ray image; when set, only ray.tar is written")
	rayImg := fl.String("ray-image", "rayfleet.local/ray:dev", "name and tag of the Ray image (with -ray-layer)")
	rayVersion := fl.String("ray-version", "", "Ray version the layer holds, a label of the Ray image (with -ray-layer)")
	var b images.Build
	fl.StringVar(&b.Version, "version", "", "version label (org.opencontainers.image.version)")
	fl.StringVar(&b.Revision, "revision", "", "commit label (org.opencontainers.image.revision)")
	fl.StringVar(&b.Source, "source", "https://github.com/rayfleet/rayfleet", "source label (org.opencontainers.image.source)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if fl.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	var err error
	if b.Created, err = sourceDateEpoch(os.Getenv("SOURCE_DATE_EPOCH")); err != nil {
		return err
	}
	if *rayLayer != "" {
		return writeRay(b, *rayLayer, *rayImg, *rayVersion, *out)
	}
	// Bad names fail before the images are built rather than after.
	rfTag, err := parseTag(*img)
	if err != nil {
		return err
	}
	var pauseTag name.Tag
	if *pauseImg != "" {
		if pauseTag, err = parseTag(*pauseImg); err != nil {
			return err
		}
	}
	certs, err := readOptional(*caCerts)
	if err != nil {
		return err
	}
	if err = os.MkdirAll(*out, 0o755); err != nil {
		return err
	}

	rf, err := images.Rayfleet(b, filepath.Join(*bin, "hub"), filepath.Join(*bin, "spoke"), filepath.Join(*bin, "rayfleet"), certs)
	if err != nil {
		return err
	}
	if err = write(filepath.Join(*out, "rayfleet.tar"), rfTag, rf); err != nil {
		return err
	}
	if *pauseImg == "" {
		return nil
	}
	pause, err := images.Pause(b, filepath.Join(*bin, "pause"))
	if err != nil {
		return err
	}
	return write(filepath.Join(*out, "pause.tar"), pauseTag, pause)
}

// writeRay writes the Ray image as ray.tar in out.
func writeRay(b images.Build, layer, ref, rayVersion, out string) error {
	tag, err := parseTag(ref)
	if err != nil {
		return err
	}
	if rayVersion == "" {
		return errors.New("-ray-version is required with -ray-layer")
	}
	img, err := images.Ray(b, layer, rayVersion)
	if err != nil {
		return err
	}
	if err = os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return write(filepath.Join(out, "ray.tar"), tag, img)
}

// write writes img as a Docker-format tarball tagged ref, through a temporary file so that an
// interrupted build never leaves a truncated tarball under the final name.
func write(path string, tag name.Tag, img v1.Image) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err = tarball.Write(tag, img, f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err = f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	fmt.Printf("%s %s %s (%.1f MiB)\n", path, tag, digest, float64(st.Size())/(1<<20))
	return nil
}

// parseTag parses an image name that must carry its tag (a tarball is loaded under it).
func parseTag(ref string) (name.Tag, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image name %q: %w", ref, err)
	}
	return tag, nil
}

// sourceDateEpoch reads SOURCE_DATE_EPOCH (https://reproducible-builds.org/specs/source-date-epoch/).
func sourceDateEpoch(v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: want seconds since the Unix epoch", v)
	}
	return time.Unix(sec, 0).UTC(), nil
}

func readOptional(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}
