#!/usr/bin/env bash
# Validates the served OpenAPI document (openapi-spec-validator, as 3.1), then fuzzes the
# API from it with schemathesis: examples, coverage,
# fuzzing and stateful phases (links from a registration to get, cancel, retry, release),
# against `boomerang serve --dev` on a fresh data dir. It checks that no request gets a
# 5xx, that every response (status, content type, headers, body) is what the document
# says, so every 4xx is a problem body, that requests breaking the document are refused,
# that the key is checked, and that the server logged no panic and is still up.
#
# Two checks are left out, on purpose:
#   positive_data_acceptance  the document cannot state every rule (a duration's grammar,
#                             `delay` or `fire_at` but not both, a URL's host), so data it
#                             allows may still be refused with a 422 naming the field;
#   use_after_free            DELETE /v1/tasks/{id} cancels a task, and a canceled task
#                             stays readable (200) until retention removes it.
#
# The fuzzer invents callback URLs and the server calls them, so both run in a network
# namespace of their own with only a loopback interface: nothing leaves this machine.
#
# Env: BOOMERANG_FUZZ_SECONDS (default 150), BOOMERANG_FUZZ_SEED (default 1).
# Needs the debug binary (cargo build --bin boomerang) and root, or user namespaces.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${CARGO_TARGET_DIR:-$root/target}/debug/boomerang"
reports="${CARGO_TARGET_DIR:-$root/target}/api-fuzz"

if [ "${BOOMERANG_FUZZ_NETNS:-}" != 1 ]; then
  cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}"
  req="$root/tests/api-fuzz/requirements.txt"
  if ! cmp -s "$req" "$cache/api-fuzz/requirements.txt" || ! [ -x "$cache/api-fuzz/venv/bin/schemathesis" ]; then
    echo "== installing schemathesis and openapi-spec-validator"
    mkdir -p "$cache/api-fuzz"
    python3 -m venv "$cache/api-fuzz/venv"
    "$cache/api-fuzz/venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
    cp "$req" "$cache/api-fuzz/requirements.txt"
  fi
  [ -x "$bin" ] || { echo "missing $bin: run cargo build --bin boomerang" >&2; exit 2; }
  netns=(unshare --net)
  [ "$(id -u)" = 0 ] || netns=(unshare --user --map-root-user --net)
  exec "${netns[@]}" env BOOMERANG_FUZZ_NETNS=1 VENV="$cache/api-fuzz/venv" bash "$0" "$@"
fi

# From here on, inside the namespace.
ip link set lo up
if ip route get 1.1.1.1 >/dev/null 2>&1; then
  echo "refusing to fuzz: this namespace has a route off the machine" >&2
  exit 2
fi

work=$(mktemp -d)
key="bmr_fuzz_$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
addr=127.0.0.1:8080
"$bin" serve --dev --addr "$addr" --data-dir "$work/data" --api-key "$key" \
  --sweep-interval 1s >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
up() {
  python3 -c "import urllib.request; urllib.request.urlopen('http://$addr/healthz', timeout=2)" 2>/dev/null
}
for _ in $(seq 1 100); do
  up && break
  sleep 0.1
done
up || { cat "$work/server.log"; exit 1; }

# The document itself first: valid OpenAPI 3.1.
python3 -c "import urllib.request, sys; sys.stdout.buffer.write(urllib.request.urlopen('http://$addr/openapi.json').read())" \
  >"$work/openapi.json"
"$VENV/bin/openapi-spec-validator" --schema 3.1 "$work/openapi.json"

mkdir -p "$reports"
status=0
# Run from the work dir: schemathesis keeps its example database in the working directory.
(cd "$work" && "$VENV/bin/schemathesis" run "http://$addr/openapi.json" \
  --header "Authorization: Bearer $key" \
  --checks all --exclude-checks positive_data_acceptance,use_after_free \
  --max-time "${BOOMERANG_FUZZ_SECONDS:-150}" --seed "${BOOMERANG_FUZZ_SEED:-1}" \
  --report junit --report-dir "$reports" --output-truncate true) || status=$?

if grep -q "request handler panicked" "$work/server.log"; then
  echo "the server logged a panic:" >&2
  grep -B2 -A5 "request handler panicked" "$work/server.log" >&2
  status=1
fi
if ! up; then
  echo "the server is no longer answering; its log ends:" >&2
  tail -30 "$work/server.log" >&2
  status=1
fi
exit $status
