#!/usr/bin/env bash
# Installs Ray (ray[serve], pinned, its dependencies pinned by ray-constraints.txt) from PyPI
# into a virtual environment cached under $RAY_CACHE (shared by all clones), and links its `ray`
# into <bin-dir>, where the contract tests (e2e/ray) find it. A warm run only finds the
# environment and relinks. PyPI is the only network this needs; nothing at test time fetches
# anything. Usage: ray.sh <bin-dir>
set -euo pipefail

BIN_DIR=$(mkdir -p "${1:?usage: ray.sh <bin-dir>}" && cd "$1" && pwd)
RAY_VERSION=${RAY_VERSION:-2.52.0}
PYTHON=${PYTHON:-python3}
RAY_CACHE=${RAY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rayfleet/ray}
HERE=$(cd "$(dirname "$0")" && pwd)
CONSTRAINTS=$HERE/ray-constraints.txt

# The environment is keyed by Ray's version, the interpreter's (a venv is bound to the
# interpreter that made it) and the constraints, so changing any of them installs afresh.
py_version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
pins=$(sha256sum "$CONSTRAINTS" | cut -c1-12)
venv=$RAY_CACHE/ray-$RAY_VERSION-py$py_version-$pins

if [ ! -f "$venv/.installed" ]; then
  printf '### %s installing ray[serve]==%s into %s\n' "$(date +%T)" "$RAY_VERSION" "$venv" >&2
  start=$SECONDS
  # A half-made environment from an interrupted run is started over.
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --no-input -c "$CONSTRAINTS" "ray[serve]==$RAY_VERSION"
  "$venv/bin/ray" --version >&2
  touch "$venv/.installed"
  printf '### %s installed in %ss\n' "$(date +%T)" $((SECONDS - start)) >&2
fi

ln -sfn "$venv/bin/ray" "$BIN_DIR/ray"
