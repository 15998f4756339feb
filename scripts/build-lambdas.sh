#!/usr/bin/env bash
# Builds the three Lambda zips: target/lambda/{api,delivery,sweeper}/bootstrap.zip
# (under $CARGO_TARGET_DIR when that is set).
# Installs what it needs: cargo-lambda (from PyPI, with zig) into a cache, and the Rust
# target. arm64 by default; BOOMERANG_LAMBDA_ARCH=x86_64 builds for x86-64, and so does a
# machine that cannot install the arm64 target.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}"

if ! cargo lambda --help >/dev/null 2>&1; then
  if ! [ -x "$cache/cargo-lambda/bin/cargo-lambda" ]; then
    echo "== installing cargo-lambda"
    python3 -m venv "$cache/cargo-lambda"
    "$cache/cargo-lambda/bin/pip" install --quiet --disable-pip-version-check 'cargo-lambda>=1.8,<2'
  fi
  export PATH="$cache/cargo-lambda/bin:$PATH"
fi

arch="${BOOMERANG_LAMBDA_ARCH:-arm64}"
if [ "$arch" = arm64 ] && ! rustup target list --installed | grep -q '^aarch64-unknown-linux-gnu$'; then
  rustup target add aarch64-unknown-linux-gnu || { echo "arm64 target unavailable: building x86-64"; arch=x86_64; }
fi
flag="--arm64"
[ "$arch" = x86_64 ] && flag="--x86-64"

# The `lambda` profile is the release profile optimized for size (see Cargo.toml); the
# test command builds with `lambda-check` (BOOMERANG_LAMBDA_PROFILE), the same zips
# unoptimized.
profile="${BOOMERANG_LAMBDA_PROFILE:-lambda}"
cargo lambda build --profile "$profile" "$flag" --output-format zip \
  -p boomerang-api-lambda -p boomerang-delivery -p boomerang-sweeper
out="${CARGO_TARGET_DIR:-target}/lambda"
for f in api delivery sweeper; do
  zip="$out/$f/bootstrap.zip"
  [ -s "$zip" ] || { echo "missing $zip" >&2; exit 1; }
  printf '%-9s %s %s KiB\n' "$f" "$arch" "$(( $(stat -c %s "$zip") / 1024 ))"
done
