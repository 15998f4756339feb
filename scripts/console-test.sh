#!/usr/bin/env bash
# The console's browser tests: headless Chromium (Debian's `chromium` package) driven by
# playwright-core, against the debug binary and a receiver on loopback. Installs what it
# needs: playwright-core from tests/console/package-lock.json into the cache, and chromium
# with apt-get when it is missing. Screenshots go to target/console-screenshots/.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}/console"
target="${CARGO_TARGET_DIR:-$root/target}"
chromium="${BOOMERANG_CHROMIUM:-/usr/bin/chromium}"

if ! [ -x "$chromium" ]; then
  echo "== installing chromium (Debian package)"
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq chromium >/dev/null
fi

lock="$root/tests/console/package-lock.json"
if ! cmp -s "$lock" "$cache/package-lock.json" || ! [ -d "$cache/node_modules/playwright-core" ]; then
  echo "== installing playwright-core"
  mkdir -p "$cache"
  cp "$root/tests/console/package.json" "$lock" "$cache/"
  (cd "$cache" && npm ci --silent --no-audit --no-fund >/dev/null)
fi

[ -x "$target/debug/boomerang" ] || { echo "missing $target/debug/boomerang: run cargo build" >&2; exit 2; }
export BOOMERANG_BIN="$target/debug/boomerang"
export BOOMERANG_NODE_MODULES="$cache/node_modules"
export BOOMERANG_SCREENSHOTS="$target/console-screenshots"
export BOOMERANG_CHROMIUM="$chromium"
# The TAP reporter ends with "# pass N" and "# fail N", which the test command sums.
node --test --test-reporter=tap "$root/tests/console/"
