#!/usr/bin/env bash
# Starts a throw-away PostgreSQL cluster on loopback for the tests, which many suites share
# (each test makes a database of its own on it: boomerang_postgres::testing::fresh_database),
# and exports where it is. Source it: `. scripts/postgres.sh`.
#   BOOMERANG_TEST_DATABASE_URL  postgres://postgres@127.0.0.1:PORT/postgres (the cluster's
#                                superuser; trust authentication, loopback only)
#   BOOMERANG_TEST_PG_BIN        its bin directory (initdb, pg_ctl, psql): the tests' private
#                                clusters (boomerang_postgres::testing::Cluster) use it too
# Installs Debian's `postgresql` package if no Debian PostgreSQL is found, and takes the
# newest of /usr/lib/postgresql/*/bin. The cluster lives in a temporary directory (its data,
# its server log `postgres.log`, its Unix socket), owned by an unprivileged user when run as
# root (PostgreSQL refuses to run as root): `postgres`, or `nobody` if there is none. fsync
# stays on, as in production.
#
# Stopped (immediate shutdown) and its directory removed when the shell exits: by
# `stop_postgres`, which this script adds to the EXIT trap in force when it is sourced (it
# runs first, then the trap that was there). A script that sets its EXIT trap after sourcing
# this one replaces that trap, and must call `stop_postgres` itself; hence source it after
# scripts/emulators.sh, whose `trap stop_emulators EXIT` would otherwise clobber it. A
# watchdog also stops it if the shell dies without running its trap (SIGKILL).
#
# Manual check:
#   bash -c '. scripts/postgres.sh; psql "$BOOMERANG_TEST_DATABASE_URL" -c "select version()"'

# The newest Debian PostgreSQL's bin directory with an initdb, or nothing.
postgres_find_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ] && printf '%s\n' "$dir"
  done | sort -V | tail -n 1
}

postgres_install() {
  local sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo -n)
  echo "== installing PostgreSQL (Debian's postgresql package)"
  # Without the cluster the package would create and start on port 5432: the tests make
  # their own.
  local no_main=/etc/postgresql-common/createcluster.d/boomerang-tests-no-main-cluster.conf
  "${sudo[@]}" mkdir -p "$(dirname "$no_main")"
  echo 'create_main_cluster = false' | "${sudo[@]}" tee "$no_main" >/dev/null
  local install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q
    --no-install-recommends postgresql)
  if ! "${install[@]}" >/dev/null; then
    # A fresh machine may not have the package lists yet.
    "${sudo[@]}" apt-get update -q >/dev/null
    "${install[@]}" >/dev/null
  fi
  "${sudo[@]}" rm -f "$no_main"
}

postgres_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Runs a PostgreSQL command as the cluster's owner, from its directory (the caller's may be
# one the owner cannot read).
postgres_as() {
  if [ "$(id -u)" = 0 ]; then
    (cd "$postgres_dir" && runuser -u "$postgres_user" -- "$@")
  else
    (cd "$postgres_dir" && "$@")
  fi
}

stop_postgres() {
  if [ -n "${postgres_dir:-}" ] && [ -d "$postgres_dir" ]; then
    if [ -f "$postgres_dir/data/postmaster.pid" ]; then
      postgres_as "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -m immediate -w stop \
        >/dev/null 2>&1
    fi
    rm -rf "$postgres_dir"
  fi
  if [ -n "${postgres_watchdog_pid:-}" ]; then
    kill "$postgres_watchdog_pid" 2>/dev/null
    postgres_watchdog_pid=
  fi
  true
}

postgres_bin=$(postgres_find_bin)
if [ -z "$postgres_bin" ]; then
  postgres_install
  postgres_bin=$(postgres_find_bin)
  [ -n "$postgres_bin" ] || { echo "no initdb under /usr/lib/postgresql/*/bin after installing postgresql" >&2; exit 1; }
fi

if [ "$(id -u)" = 0 ]; then
  if id -u postgres >/dev/null 2>&1; then postgres_user=postgres; else postgres_user=nobody; fi
  # Under /tmp, which the unprivileged owner can reach (a root TMPDIR may not be).
  postgres_dir=$(mktemp -d /tmp/boomerang-pg.XXXXXX)
  chown "$postgres_user:" "$postgres_dir"
else
  postgres_user=$(id -un)
  postgres_dir=$(mktemp -d "${TMPDIR:-/tmp}/boomerang-pg.XXXXXX")
fi
chmod 700 "$postgres_dir"

# The previous EXIT trap's command ("trap -- 'CMD' EXIT", or nothing), to run after ours.
postgres_trap_command() { if [ $# -ge 3 ]; then printf '%s' "$3"; fi; }
postgres_previous_trap=$(eval "postgres_trap_command $(trap -p EXIT)")
# shellcheck disable=SC2064 # the previous trap's command, as it is now
trap "stop_postgres; $postgres_previous_trap" EXIT

# The watchdog: stops the cluster once this shell has gone, however it went. Deaf to the
# terminal's signals (stop_postgres ends it with SIGTERM), and holding none of the shell's output (a pipe it held open would keep
# its reader waiting).
(
  trap '' INT HUP QUIT
  while kill -0 $$ 2>/dev/null; do sleep 2; done
  stop_postgres
) </dev/null >/dev/null 2>&1 &
postgres_watchdog_pid=$!
disown "$postgres_watchdog_pid" 2>/dev/null || true

# --no-sync: initdb's own files only; the running server fsyncs as configured below (on).
if ! postgres_as "$postgres_bin/initdb" -D "$postgres_dir/data" -U postgres --auth=trust \
  --encoding=UTF8 --locale=C --no-sync >"$postgres_dir/initdb.log" 2>&1; then
  cat "$postgres_dir/initdb.log" >&2
  echo "initdb failed" >&2
  exit 1
fi
cat >>"$postgres_dir/data/postgresql.conf" <<EOF

# A test server that many suites share (scripts/postgres.sh).
listen_addresses = '127.0.0.1'
unix_socket_directories = '$postgres_dir'
max_connections = 500
shared_buffers = 256MB
fsync = on
synchronous_commit = on
full_page_writes = on
# No parallel query: its shared memory is in /dev/shm, small in containers.
max_parallel_workers_per_gather = 0
EOF

# A free port may be taken between finding it and the server binding it: another, then.
postgres_port=
for _ in 1 2 3 4 5; do
  postgres_try_port=$(postgres_free_port)
  if postgres_as "$postgres_bin/pg_ctl" -D "$postgres_dir/data" -l "$postgres_dir/postgres.log" \
    -o "-p $postgres_try_port" -w -t 60 start >/dev/null 2>&1; then
    postgres_port=$postgres_try_port
    break
  fi
  grep -q 'could not bind\|Address already in use' "$postgres_dir/postgres.log" 2>/dev/null || break
done
if [ -z "$postgres_port" ]; then
  cat "$postgres_dir/postgres.log" >&2 2>/dev/null
  echo "PostgreSQL did not start (log above)" >&2
  exit 1
fi
for _ in $(seq 1 300); do
  "$postgres_bin/pg_isready" -q -h 127.0.0.1 -p "$postgres_port" -U postgres -d postgres && break
  sleep 0.1
done
if ! "$postgres_bin/pg_isready" -q -h 127.0.0.1 -p "$postgres_port" -U postgres -d postgres; then
  cat "$postgres_dir/postgres.log" >&2
  echo "PostgreSQL does not accept connections on port $postgres_port (log above)" >&2
  exit 1
fi
export BOOMERANG_TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$postgres_port/postgres"
export BOOMERANG_TEST_PG_BIN="$postgres_bin"
echo "== PostgreSQL $("$postgres_bin/pg_ctl" --version | awk '{print $3}'): $BOOMERANG_TEST_DATABASE_URL (log in $postgres_dir/postgres.log)"
