package images

import (
	"fmt"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// RayEnv is the Ray image's environment: the virtual environment first on PATH, where Ray's
// own images have their Python; a UTF-8 locale, which Debian's minimal root lacks; and Ray's
// usage stats off, since the clusters it runs in reach nothing outside.
var RayEnv = []string{
	"PATH=/opt/ray/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"LANG=C.UTF-8",
	"RAY_USAGE_STATS_ENABLED=0",
}

// Ray is the image real Nodes run Ray Pods from: one layer holding a whole root filesystem
// (Debian, Python and ray[serve] in /opt/ray), written by e2e/tools/ray-image.sh as a gzip'd
// tar at layerPath and used as it is, so a rebuild compresses nothing. debootstrap builds for
// the machine it runs on, which is the image's platform. Like rayproject/ray it has no
// entrypoint: the RayCluster's Pods set the command.
func Ray(b Build, layerPath, rayVersion string) (v1.Image, error) {
	layer, err := tarball.LayerFromFile(layerPath, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("ray layer %s: %w", layerPath, err)
	}
	labels := b.labels("rayfleet-ray")
	labels["io.ray.version"] = rayVersion
	return Image(Spec{
		Platform: v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Layers: []SpecLayer{{
			Prebuilt:  layer,
			CreatedBy: fmt.Sprintf("rayfleet ray: Debian minbase, python3, wget, ray[serve]==%s in /opt/ray", rayVersion),
		}},
		Env:     RayEnv,
		Cmd:     []string{"/bin/bash"},
		Labels:  labels,
		Created: b.created(),
	})
}
