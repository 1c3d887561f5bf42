#!/usr/bin/env bash
# Builds the Ray image the real-Node e2e tests run (bin/images/ray.tar, for `ctr images import`
# or `docker load`) without Docker or a registry: a Debian bookworm root filesystem from the
# Debian mirror (debootstrap --variant=minbase: bash and grep, plus python3, wget and the CA
# bundle) with ray[serve] installed from PyPI into /opt/ray, pinned like e2e/tools/ray.sh. The
# root filesystem becomes one gzip'd layer cached under $RAY_IMAGE_CACHE, keyed by everything
# that goes into it; a warm run only wraps the cached layer into the tarball (seconds).
# Needs root (debootstrap, chroot, mount). Usage: ray-image.sh <bin-dir> <image-name>
set -euo pipefail

BIN_DIR=$(mkdir -p "${1:?usage: ray-image.sh <bin-dir> <image-name>}" && cd "$1" && pwd)
IMAGE=${2:?usage: ray-image.sh <bin-dir> <image-name>}
RAY_VERSION=${RAY_VERSION:-2.52.0}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
RAY_IMAGE_CACHE=${RAY_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rayfleet/ray-image}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
CONSTRAINTS=$HERE/ray-constraints.txt
# What the spoke's generated containers run besides Ray: bash (commands and exec probes), wget
# and grep (the probes before Ray 2.53); minbase has bash and grep already.
PACKAGES=python3,python3-venv,wget,ca-certificates

if [ "$(id -u)" != 0 ]; then
  # make e2e asks for the image; its one user, e2e/rayreal, skips without root as well.
  echo "ray-image.sh: needs root (debootstrap, chroot and mount); no Ray image built" >&2
  exit 0
fi

# Bump RECIPE when the steps below change what the layer holds.
RECIPE=1
key=$(cat "$CONSTRAINTS" <(echo "$RECIPE $RAY_VERSION $SUITE $PACKAGES") | sha256sum | cut -c1-12)
layer=$RAY_IMAGE_CACHE/ray-$RAY_VERSION-$SUITE-$key.tar.gz

if [ ! -f "$layer" ]; then
  command -v debootstrap >/dev/null || { echo "ray-image.sh: debootstrap is needed (apt-get install debootstrap)" >&2; exit 1; }
  printf '### %s building the Ray %s root filesystem (%s) into %s\n' "$(date +%T)" "$RAY_VERSION" "$SUITE" "$layer" >&2
  start=$SECONDS
  mkdir -p "$RAY_IMAGE_CACHE/wheels"
  work=$(mktemp -d "$RAY_IMAGE_CACHE/build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  rootfs=$work/rootfs
  # The Debian root is cached on its own (the slow part on a busy machine), so a change to the
  # Ray steps does not bootstrap Debian again.
  debian=$RAY_IMAGE_CACHE/debian-$SUITE-$(echo "$PACKAGES" | sha256sum | cut -c1-12)
  if [ ! -f "$debian/.done" ]; then
    rm -rf "$debian"
    debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$debian" "$MIRROR" >"$work/debootstrap.log" 2>&1 ||
      { tail -20 "$work/debootstrap.log" >&2; exit 1; }
    touch "$debian/.done"
    printf '### %s Debian done in %ss\n' "$(date +%T)" $((SECONDS - start)) >&2
  fi
  cp -a "$debian" "$rootfs"
  rm "$rootfs/.done"
  cp "$CONSTRAINTS" "$rootfs/tmp/ray-constraints.txt"
  # pip in the chroot trusts this machine's CA bundle (which may hold a TLS-intercepting
  # proxy's CA that Debian's lacks) and sees none of this shell's PIP_* settings.
  cp "${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}" "$rootfs/tmp/build-ca.crt"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
  mkdir -p "$rootfs/wheels"
  # A private mount namespace: /proc and the wheelhouse (on the host, kept across builds) are
  # mounted into the chroot only and vanish with it. pip's own cache keeps nothing when the
  # index's responses say not to (as through an intercepting proxy), so the wheels are
  # downloaded into the wheelhouse first and installed from it: a rebuild fetches only metadata.
  unshare -m -- sh -euc '
    rootfs=$1 cache=$2 ray=$3
    mount -t proc proc "$rootfs/proc"
    mount --bind "$cache" "$rootfs/wheels"
    in_root() {
      env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 PIP_CERT=/tmp/build-ca.crt \
        ${HTTPS_PROXY:+HTTPS_PROXY=$HTTPS_PROXY} ${HTTP_PROXY:+HTTP_PROXY=$HTTP_PROXY} \
        ${NO_PROXY:+NO_PROXY=$NO_PROXY} ${PIP_INDEX_URL:+PIP_INDEX_URL=$PIP_INDEX_URL} \
        chroot "$rootfs" "$@"
    }
    in_root python3 -m venv /opt/ray
    in_root /opt/ray/bin/python -m pip download --quiet --no-input --disable-pip-version-check \
      -d /wheels -c /tmp/ray-constraints.txt "ray[serve]==$ray"
    in_root /opt/ray/bin/python -m pip install --quiet --no-input --disable-pip-version-check \
      --no-index --find-links /wheels -c /tmp/ray-constraints.txt "ray[serve]==$ray"
  ' sh "$rootfs" "$RAY_IMAGE_CACHE/wheels" "$RAY_VERSION"
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 chroot "$rootfs" /opt/ray/bin/ray --version >&2
  # What a running container never reads: the package lists and caches, documentation, the
  # build's resolver settings (the kubelet mounts the Pod's own /etc/resolv.conf).
  rm -rf "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
    "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/* \
    "$rootfs"/root/.cache "$rootfs"/wheels "$rootfs"/tmp/* "$rootfs"/var/log/*.log "$rootfs"/etc/resolv.conf \
    "$rootfs"/dev/*
  # Ray and Serve found on PATH also by a login shell (bash -l resets PATH from /etc/profile).
  for tool in ray serve python python3; do ln -sfn "/opt/ray/bin/$tool" "$rootfs/usr/local/bin/$tool"; done
  # Sorted names, fixed times and numeric owners: the same root filesystem gives the same layer.
  tar --sort=name --mtime=@0 --numeric-owner \
    --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -C "$rootfs" -c . | gzip -1 >"$work/layer.tar.gz"
  mv "$work/layer.tar.gz" "$layer"
  printf '### %s layer written in %ss (%s)\n' "$(date +%T)" $((SECONDS - start)) "$(du -h "$layer" | cut -f1)" >&2
fi

cd "$ROOT"
go run ./e2e/tools/image -ray-layer "$layer" -ray-image "$IMAGE" -ray-version "$RAY_VERSION" -out "$BIN_DIR/images"
