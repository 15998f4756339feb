#!/usr/bin/env bash
# The TypeScript client's checks (sdk/typescript): install from its lock file, build with
# tsc (which type-checks), check the generated types against `boomerang openapi`, run its
# tests against the real binary, and pack it. Runs on a fresh clone once `cargo build` has
# made target/debug/boomerang (or $BOOMERANG_BIN).
#
# node_modules is installed once per lock file into the cache and linked into the package,
# so a run with a warm cache installs nothing. The tests print TAP ("# pass N", "# fail N").
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
pkg="$root/sdk/typescript"
cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}/sdk-typescript"
target="${CARGO_TARGET_DIR:-$root/target}"
export BOOMERANG_BIN="${BOOMERANG_BIN:-$target/debug/boomerang}"
[ -x "$BOOMERANG_BIN" ] || { echo "missing $BOOMERANG_BIN: run cargo build --bin boomerang" >&2; exit 2; }
cd "$pkg"

echo "== sdk/typescript: dependencies (npm ci, cached per lock file)"
lock_id="$(sha256sum package-lock.json | cut -c1-16)"
modules="$cache/modules-$lock_id"
if ! [ -f "$modules/installed" ]; then
  mkdir -p "$cache"
  rm -rf "$cache"/modules-* "$cache"/install.*
  work="$(mktemp -d "$cache/install.XXXXXX")"
  cp package.json package-lock.json "$work/"
  (cd "$work" && npm ci --cache "$cache/npm" --prefer-offline --no-audit --no-fund --loglevel=error)
  touch "$work/installed"
  mv "$work" "$modules"
fi
# A node_modules of the developer's own (a directory) is replaced by the link.
if [ "$(readlink node_modules 2>/dev/null)" != "$modules/node_modules" ]; then
  rm -rf node_modules
  ln -s "$modules/node_modules" node_modules
fi

echo "== sdk/typescript: build (tsc)"
rm -rf dist
node_modules/.bin/tsc

echo "== sdk/typescript: generated types against \`boomerang openapi\`"
node scripts/generate.mjs --check

echo "== sdk/typescript: tests (against the real server)"
# The tests mostly wait on servers and deliveries, so files run side by side.
node --test --test-reporter=tap --test-concurrency=4 tests/

echo "== sdk/typescript: npm pack"
packed="$(mktemp -d)"
trap 'rm -rf "$packed"' EXIT
npm pack --ignore-scripts --silent --pack-destination "$packed" >/dev/null
tarball="$(ls "$packed"/boomerang-client-*.tgz)"
tar -tzf "$tarball" >"$packed/contents"
for file in package/dist/index.js package/dist/index.d.ts package/dist/receiver/core.js package/README.md package/LICENSE; do
  grep -qx "$file" "$packed/contents" || { echo "the package lacks $file" >&2; exit 1; }
done
echo "packed $(basename "$tarball"): $(wc -l <"$packed/contents") files"
