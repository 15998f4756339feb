#!/usr/bin/env bash
# Installs (once, into a cache) and starts the AWS emulators on loopback, and exports their
# endpoints for the tests. Source it: `. scripts/emulators.sh`; they stop when the shell exits.
#   moto server  → BOOMERANG_TEST_MOTO_ENDPOINT      (DynamoDB, SQS, Scheduler; run by
#                  tests/emulators/moto_server.py, which mends a race in its SQS model and
#                  takes out two costs that grow with a queue's length)
#   moto server  → BOOMERANG_TEST_MOTO_BULK_ENDPOINT (a second one: the many-worker test's
#                  queue, and the moto of the test command's second lane of test binaries)
#   dynalite     → BOOMERANG_TEST_DYNALITE_ENDPOINT  (DynamoDB with atomic conditional writes)
# and the Python they run under, with the stock `standardwebhooks` verifier:
#                  BOOMERANG_TEST_PYTHON

emulators_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
emulators_cache="${BOOMERANG_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/boomerang-test}"

# The tests talk to emulators on this machine only.
if [ -n "${AWS_ENDPOINT_URL:-}" ] && ! [[ "$AWS_ENDPOINT_URL" =~ ^https?://(127\.[0-9.]+|localhost|\[::1\])(:[0-9]+)?/?$ ]]; then
  echo "refusing to run: AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL is not a loopback address" >&2
  exit 2
fi
unset AWS_ENDPOINT_URL AWS_PROFILE
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1
# Never ask an instance metadata service for anything.
export AWS_EC2_METADATA_DISABLED=true

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

install_emulators() {
  local req="$emulators_root/tests/emulators/requirements.txt"
  local pkg="$emulators_root/tests/emulators/package.json"
  mkdir -p "$emulators_cache"
  if ! cmp -s "$req" "$emulators_cache/requirements.txt" || ! [ -x "$emulators_cache/venv/bin/moto_server" ]; then
    echo "== installing moto server"
    python3 -m venv "$emulators_cache/venv"
    "$emulators_cache/venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
    cp "$req" "$emulators_cache/requirements.txt"
  fi
  if ! cmp -s "$pkg" "$emulators_cache/node/package.json" || ! [ -e "$emulators_cache/node/node_modules/dynalite/cli.js" ]; then
    echo "== installing dynalite"
    mkdir -p "$emulators_cache/node"
    cp "$pkg" "$emulators_cache/node/package.json"
    (cd "$emulators_cache/node" && npm install --silent --no-audit --no-fund >/dev/null)
  fi
}

wait_port() {
  local port=$1 name=$2
  for _ in $(seq 1 200); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then
      return 0
    fi
    sleep 0.1
  done
  echo "$name did not start on port $port" >&2
  exit 1
}

stop_emulators() {
  [ -n "${moto_pid:-}" ] && kill "$moto_pid" 2>/dev/null
  [ -n "${moto_bulk_pid:-}" ] && kill "$moto_bulk_pid" 2>/dev/null
  [ -n "${dynalite_pid:-}" ] && kill "$dynalite_pid" 2>/dev/null
  true
}

install_emulators
emulators_logs=$(mktemp -d)
# moto's server on loopback port $1, logging to $2.
start_moto() {
  "$emulators_cache/venv/bin/python" "$emulators_root/tests/emulators/moto_server.py" \
    -H 127.0.0.1 -p "$1" >"$2" 2>&1 &
}
moto_port=$(free_port)
start_moto "$moto_port" "$emulators_logs/moto.log"
moto_pid=$!
moto_bulk_port=$(free_port)
start_moto "$moto_bulk_port" "$emulators_logs/moto-bulk.log"
moto_bulk_pid=$!
dynalite_port=$(free_port)
node "$emulators_cache/node/node_modules/dynalite/cli.js" --host 127.0.0.1 --port "$dynalite_port" \
  --createTableMs 0 --deleteTableMs 0 --updateTableMs 0 >"$emulators_logs/dynalite.log" 2>&1 &
dynalite_pid=$!
trap stop_emulators EXIT
wait_port "$moto_port" "moto server"
wait_port "$moto_bulk_port" "moto server (bulk)"
wait_port "$dynalite_port" dynalite
export BOOMERANG_TEST_PYTHON="$emulators_cache/venv/bin/python"
export BOOMERANG_TEST_MOTO_ENDPOINT="http://127.0.0.1:$moto_port"
export BOOMERANG_TEST_MOTO_BULK_ENDPOINT="http://127.0.0.1:$moto_bulk_port"
export BOOMERANG_TEST_DYNALITE_ENDPOINT="http://127.0.0.1:$dynalite_port"
echo "== emulators: moto $BOOMERANG_TEST_MOTO_ENDPOINT, dynalite $BOOMERANG_TEST_DYNALITE_ENDPOINT (logs in $emulators_logs)"
