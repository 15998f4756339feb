#!/usr/bin/env bash
# The documentation's test: the README stays a short first read, the book's generated
# reference pages match the binary, every shell sample of Getting started, the Guides and
# the README runs as written, the book builds, and no link inside it is broken.
# Installs what it needs by itself (mdBook, pinned, built from crates.io into the cache;
# jq from Debian's packages when it is missing). Needs the debug binary (it builds it if
# missing) and root, or unprivileged user namespaces (the samples run in loopback-only
# network namespaces). Prints `docs: passed` or `docs: failed` last.
set -uo pipefail
cd "$(dirname "$0")/.."

MDBOOK_VERSION=0.5.4
cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}"
bin="${CARGO_TARGET_DIR:-target}/debug/boomerang"
mdbook="$cache/mdbook/bin/mdbook"
failed=()

# Runs one step, timed; a failed step is noted and the others still run.
step() {
  local name=$1
  shift
  local start=$SECONDS
  echo "== docs: $name"
  if "$@"; then
    echo "   $name: ok ($((SECONDS - start)) s)"
  else
    echo "   $name: FAILED ($((SECONDS - start)) s)"
    failed+=("$name")
  fi
}

install_mdbook() {
  if [ "$("$mdbook" --version 2>/dev/null)" = "mdbook v$MDBOOK_VERSION" ]; then
    return 0
  fi
  # From source, as crates.io publishes it: the search feature only (no server, no file
  # watcher), which keeps the cold build to a few minutes.
  cargo install mdbook --locked --version "$MDBOOK_VERSION" --no-default-features \
    --features search --root "$cache/mdbook" --quiet
}

install_jq() {
  command -v jq >/dev/null && return 0
  if [ "$(id -u)" != 0 ]; then
    echo "the samples use jq: install it (apt-get install jq)" >&2
    return 1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null 2>&1 || {
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
  }
}

build_binary() {
  [ -x "$bin" ] || cargo build --locked --bin boomerang
}

# The README is what a newcomer reads first: short, and its two commands as they are.
readme() {
  local lines ok=0
  lines=$(wc -l <README.md)
  if [ "$lines" -gt 300 ]; then
    echo "README.md has $lines lines; at most 300" >&2
    ok=1
  fi
  for row in \
    '| run the service locally | `cargo run --release --bin boomerang -- serve --dev` |' \
    '| run the whole test suite | `./scripts/test.sh` |'; do
    if ! grep -qxF -- "$row" README.md; then
      echo "README.md no longer has the row: $row" >&2
      ok=1
    fi
  done
  echo "   README.md: $lines lines"
  return $ok
}

step "install mdBook $MDBOOK_VERSION" install_mdbook
step "install jq" install_jq
step "the boomerang binary" build_binary
step "README" readme
step "generated reference pages" python3 docs/gen-reference.py --bin "$bin"
step "shell samples" python3 docs/check-samples.py --bin "$bin"
step "mdbook build" "$mdbook" build docs
step "links" python3 docs/check-links.py docs/book --markdown README.md

if [ ${#failed[@]} -eq 0 ]; then
  echo "docs: passed"
else
  echo "failed steps: ${failed[*]}"
  echo "docs: failed"
  exit 1
fi
