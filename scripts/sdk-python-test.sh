#!/usr/bin/env bash
# The Python client's checks (sdk/python): its generated models against the binary's
# OpenAPI document, a strict type check, its tests against the real `boomerang serve`, and
# a build of its sdist and wheel. Installs what it needs by itself: a virtualenv with the pinned tools of
# sdk/python/requirements.txt, cached under the test cache and keyed by that file and the
# Python version, and the package itself (editable) into it.
#
# Env: BOOMERANG_BIN (default target/debug/boomerang; run `cargo build --bin boomerang`),
#      PYTHON (default python3, 3.10 or later), BOOMERANG_CACHE_DIR.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
pkg="$root/sdk/python"
export BOOMERANG_BIN="${BOOMERANG_BIN:-${CARGO_TARGET_DIR:-$root/target}/debug/boomerang}"
python="${PYTHON:-python3}"
cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}/sdk-python"

[ -x "$BOOMERANG_BIN" ] || { echo "missing $BOOMERANG_BIN: run cargo build --bin boomerang" >&2; exit 2; }
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || { echo "the Python client needs Python 3.10 or later ($python is $("$python" --version))" >&2; exit 2; }

key=$({ cat "$pkg/requirements.txt"; "$python" --version; } | sha256sum | cut -c1-16)
venv="$cache/$key"
if ! [ -e "$venv/.complete" ]; then
  echo "== installing the Python client's test tools (sdk/python/requirements.txt)"
  # Older keys' virtualenvs are of no more use; one left half-made is made again.
  rm -rf "$cache"
  "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$pkg/requirements.txt"
  touch "$venv/.complete"
fi
py="$venv/bin/python"
"$py" -m pip install --quiet --disable-pip-version-check --no-input --no-deps --no-build-isolation -e "$pkg"

cd "$pkg"
echo "== sdk/python: generated models against \`$BOOMERANG_BIN openapi\`"
"$py" scripts/generate_models.py --check

echo "== sdk/python: type check (mypy --strict, as Python 3.10)"
"$py" -m mypy --strict --python-version 3.10 --cache-dir "$venv/mypy-cache" src

echo "== sdk/python: tests (pytest, against the real server)"
status=0
"$py" -m pytest -q -p no:cacheprovider || status=$?

echo "== sdk/python: build (sdist and wheel)"
dist=$(mktemp -d)
trap 'rm -rf "$dist"' EXIT
"$py" -m build --no-isolation --outdir "$dist" "$pkg" >"$dist/build.log" 2>&1 || { cat "$dist/build.log"; exit 1; }
ls "$dist"/boomerang_client-0.1.0.tar.gz "$dist"/boomerang_client-0.1.0-py3-none-any.whl
exit $status
