#!/usr/bin/env bash
# The whole test suite: format, lint, the Lambda zips, the CDK stack's checks, unit,
# contract, emulator and end-to-end tests.
# Runs on a fresh clone; installs whatever it needs by itself.
set -euo pipefail
cd "$(dirname "$0")/.."

need_component() {
  if ! cargo "$1" --version >/dev/null 2>&1; then
    echo "== installing rustup component $2"
    rustup component add "$2"
  fi
}
need_component fmt rustfmt
need_component clippy clippy

echo "== cargo fmt --check"
cargo fmt --all --check

echo "== cargo clippy"
cargo clippy --locked --workspace --all-targets -- -D warnings

echo "== build (the end-to-end tests run the real binary)"
cargo build --locked --workspace --all-targets

echo "== Lambda zips (cargo lambda build --release --arm64)"
bash scripts/build-lambdas.sh
# The cost meter's smoke test runs the functions under cargo-lambda's runtime emulator.
if ! cargo lambda --help >/dev/null 2>&1; then
  export PATH="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}/cargo-lambda/bin:$PATH"
fi

echo "== infrastructure (CDK) checks"
log=$(mktemp)
bash scripts/infra-checks.sh 2>&1 | tee "$log"

echo "== AWS emulators"
# shellcheck source=scripts/emulators.sh
. scripts/emulators.sh

echo "== cargo test"
cargo test --locked --workspace 2>&1 | tee -a "$log"
# One closing line for the whole run: the sum over every cargo test binary and the
# CDK assertion tests (node's runner prints "# pass N" and "# fail N").
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^# pass / { p += $3 } /^# fail / { f += $3 }
     END { printf "Summary: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log"
