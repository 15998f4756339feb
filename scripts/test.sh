#!/usr/bin/env bash
# The whole test suite: format, lint, the Lambda zips, the CDK stack's checks, unit,
# contract, emulator and end-to-end tests, the console in headless Chromium,
# schemathesis against the OpenAPI document, the TypeScript and Python client libraries'
# suites, the book (its generated pages, samples and links), and the container image.
# Runs on a fresh clone; installs whatever it needs by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's heading carries the minutes and seconds since the start, to see where the
# time goes.
step() { printf '== [%02d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

need_component() {
  if ! cargo "$1" --version >/dev/null 2>&1; then
    echo "== installing rustup component $2"
    rustup component add "$2"
  fi
}
# One build, run once: incremental caches would only double the target directory's size
# (tens of GB over the end-to-end test binaries), and a full disk fails the link.
export CARGO_INCREMENTAL=0
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$target_dir"
echo "== free space where the build goes: $(df -h --output=avail "$target_dir" | tail -1 | tr -d ' ')"
# A target directory kept between runs gathers incremental caches from earlier builds;
# short of room, they go first (nothing here reads them).
if (($(df -k --output=avail "$target_dir" | tail -1) < 20 * 1024 * 1024)); then
  echo "== under 20 GB free: removing the target directory's incremental caches"
  rm -rf "$target_dir"/debug/incremental "$target_dir"/release/incremental
fi

need_component fmt rustfmt
need_component clippy clippy

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy"
cargo clippy --locked --workspace --all-targets -- -D warnings

step "build (the end-to-end tests run the real binary)"
cargo build --locked --workspace --all-targets

step "the Rust client's crates package (cargo package)"
cargo package --locked --no-verify -p boomerang-core -p boomerang-api -p boomerang-client

step "Lambda zips (cargo lambda build --arm64, unoptimized: they are synthesized, not run)"
BOOMERANG_LAMBDA_PROFILE=lambda-check bash scripts/build-lambdas.sh
# The cost meter's smoke test runs the functions under cargo-lambda's runtime emulator.
if ! cargo lambda --help >/dev/null 2>&1; then
  export PATH="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}/cargo-lambda/bin:$PATH"
fi

step "infrastructure (CDK) checks"
log=$(mktemp)
bash scripts/infra-checks.sh 2>&1 | tee "$log"

step "AWS emulators"
# shellcheck source=scripts/emulators.sh
. scripts/emulators.sh

# After the emulators: it chains its stop in front of their EXIT trap.
step "PostgreSQL (a throw-away cluster every suite shares)"
# shellcheck source=scripts/postgres.sh
. scripts/postgres.sh

# The API fuzzer has a network namespace of its own (no shared ports), so it runs while
# the cargo tests do; its output is shown when both are done.
step "API fuzzing (schemathesis, in the background; output below)"
fuzz_log=$(mktemp)
bash scripts/api-fuzz.sh >"$fuzz_log" 2>&1 &
fuzz_pid=$!

# The client libraries' suites start servers of their own on free ports, and the book's
# samples run in network namespaces of their own; all mostly wait on the servers: they
# run while the cargo tests do, their output shown when both are done.
step "client libraries and the book (in the background; output below)"
docs_log=$(mktemp)
bash scripts/docs-test.sh >"$docs_log" 2>&1 &
docs_pid=$!
sdk_ts_log=$(mktemp)
bash scripts/sdk-typescript-test.sh >"$sdk_ts_log" 2>&1 &
sdk_ts_pid=$!
sdk_py_log=$(mktemp)
bash scripts/sdk-python-test.sh >"$sdk_py_log" 2>&1 &
sdk_py_pid=$!
# The container image (scripts/image-test.sh: the Dockerfile and compose.yaml checked, an
# image built with buildah, offline where no registry answers, and run with podman): about
# ten seconds with the binary built above, and it says which way it went and why.
step "container image (in the background; output below)"
image_log=$(mktemp)
bash scripts/image-test.sh >"$image_log" 2>&1 &
image_pid=$!

# The Rust tests in two lanes side by side, each running its binaries one after another
# (two tests at a time in each): six of the slowest end-to-end test files (AWS custody
# and outages, bulk jobs, many workers, ordered delivery, several servers on PostgreSQL:
# about half the suite's time; `bulk` names the core crate's bulk tests too) on the
# second moto server, every other test on the first; one moto server for all would be
# overloaded. Both lanes select the whole workspace, so that features resolve as in the
# build above and nothing is compiled again; the first lane's targets are every one
# `cargo test` would run but those six.
slow_lane=(aws_custody aws_outages bulk many_workers order_keys postgres_servers)
first_lane=$(cargo metadata --locked --no-deps --format-version 1 | python3 -c '
import json, sys
slow = set(sys.argv[1:])
targets = [t for p in json.load(sys.stdin)["packages"] for t in p["targets"] if t["test"]]
print("--lib")
print(*sorted({"--bin " + t["name"] for t in targets if "bin" in t["kind"]}), sep="\n")
print(*sorted({"--test " + t["name"] for t in targets if "test" in t["kind"]} - {"--test " + n for n in slow}), sep="\n")
' "${slow_lane[@]}")
[ "$(grep -c -- '^--test ' <<<"$first_lane")" -gt 10 ] || { echo "cannot list the workspace's test targets" >&2; exit 1; }
# The fault tests print what they measured (lost, duplicate calls, time to full repair):
# shown even when they pass.
step "cargo test: the slowest end-to-end tests (in the background; output below)"
slow_lane_log=$(mktemp)
BOOMERANG_TEST_MOTO_ENDPOINT="$BOOMERANG_TEST_MOTO_BULK_ENDPOINT" \
  cargo test --locked --workspace --no-fail-fast $(printf -- '--test %s ' "${slow_lane[@]}") \
    -- --show-output \
  >"$slow_lane_log" 2>&1 &
slow_lane_pid=$!

step "cargo test: the rest of the workspace"
test_status=0
# shellcheck disable=SC2086 # one selection flag and its target's name per line, split
cargo test --locked --workspace --no-fail-fast $first_lane 2>&1 |
  tee -a "$log" || test_status=$?
# Every library's doc tests (only the client's have any: the others' blocks are text).
cargo test --locked --workspace --no-fail-fast --doc 2>&1 | tee -a "$log" || test_status=$?

step "console browser tests (headless Chromium)"
console_status=0
bash scripts/console-test.sh 2>&1 | tee -a "$log" || console_status=$?

# A background suite's output, into the run's log, and its exit status.
background_output() {
  local pid=$1 out=$2 name=$3 status=0
  wait "$pid" || status=$?
  tee -a "$log" <"$out"
  rm -f "$out"
  [ "$status" = 0 ] || echo "$name: failed"
  return "$status"
}
step "cargo test: the slowest end-to-end tests' output"
background_output "$slow_lane_pid" "$slow_lane_log" "cargo test (the slowest tests)" || test_status=$?
step "TypeScript client output"
sdk_ts_status=0
background_output "$sdk_ts_pid" "$sdk_ts_log" "TypeScript client" || sdk_ts_status=$?
step "Python client output"
sdk_py_status=0
background_output "$sdk_py_pid" "$sdk_py_log" "Python client" || sdk_py_status=$?
step "documentation (the book) output"
docs_status=0
background_output "$docs_pid" "$docs_log" "documentation" || docs_status=$?
step "container image output"
image_status=0
background_output "$image_pid" "$image_log" "container image" || image_status=$?

step "API fuzzing (schemathesis) output"
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
if [ "$fuzz_status" = 0 ]; then
  sed -n '/= SUMMARY =/,$p' "$fuzz_log"
  echo "API fuzzing: passed" | tee -a "$log"
else
  cat "$fuzz_log"
  echo "API fuzzing: failed" | tee -a "$log"
fi
# One closing line for the whole run: the sum over every cargo test binary, the CDK
# assertion tests, the console's and the TypeScript client's (node's runner prints
# "# pass N" and "# fail N"), the Python client's (pytest: "N failed, M passed in …"), and
# the book's checks, the container image's (unless skipped) and the API fuzzing as one each.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^[0-9]+ (passed|failed)/ { for (i = 1; i < NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     /^# pass / { p += $3 } /^# fail / { f += $3 }
     /^API fuzzing: passed/ { p += 1 } /^API fuzzing: failed/ { f += 1 }
     /^docs: passed/ { p += 1 } /^docs: failed/ { f += 1 }
     /^image: passed/ { p += 1 } /^image: failed/ { f += 1 }
     END { printf "Summary: %d passed, %d failed\n", p, f }' "$log"
rm -f "$log" "$fuzz_log"
[ "$test_status" = 0 ] && [ "$console_status" = 0 ] && [ "$fuzz_status" = 0 ] &&
  [ "$sdk_ts_status" = 0 ] && [ "$sdk_py_status" = 0 ] && [ "$docs_status" = 0 ] &&
  [ "$image_status" = 0 ]
