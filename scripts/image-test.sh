#!/usr/bin/env bash
# The container image's test: the Dockerfile and compose.yaml are checked for what they
# must say, then an image is built and run: `boomerang --version` in it, its user, and
# its HEALTHCHECK (`/readyz`) passing on an embedded-store server in it, which then stops
# cleanly on SIGTERM.
#
# Which image is built, and why, is printed:
#   - the Dockerfile itself (`buildah bud`), when its base images are here or their
#     registry is reachable, and BOOMERANG_IMAGE_BUILD=full is set: it compiles the workspace in release inside
#     the builder image, far past this test's two-minute budget, hence opt-in;
#   - otherwise an equivalent image offline: `buildah from scratch` with the binary already
#     built here (BOOMERANG_IMAGE_BIN, or the newer of target/{release,debug}/boomerang),
#     the shared libraries `ldd` lists for it and for bash (the health probe's shell), the
#     CA certificates, and a passwd file with the Dockerfile's user; its configuration
#     (user, working directory, environment, port, health check, entrypoint and command)
#     is read from the Dockerfile's last stage, so that the probe tested is the Dockerfile's.
# The image runs under podman (network none: nothing is published); where no container can
# start (no usable OCI runtime), its root filesystem runs under unshare + chroot instead
# (BOOMERANG_IMAGE_RUN=chroot takes that way even where containers start).
#
# Installs buildah, podman and runc from Debian's packages when missing (root only). Uses no
# network but Debian's packages (and, for the opt-in build, the base images' registry).
# Prints `image: passed`, `image: failed` or `image: skipped (why)` last.
set -uo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
failed=()
work=$(mktemp -d)
tag="localhost/boomerang-image-test:$$"
container="boomerang-image-test-$$"
built_image=""
working_container=""

cleanup() {
  podman rm -f -t 0 "$container" >/dev/null 2>&1
  [ -n "$working_container" ] && buildah rm "$working_container" >/dev/null 2>&1
  [ -n "$built_image" ] && podman rmi -f "$built_image" >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

# Runs one step, timed; a failed step is noted and the others still run.
step() {
  local name=$1
  shift
  local t=$SECONDS
  echo "== image: $name"
  if "$@"; then
    echo "   $name: ok ($((SECONDS - t)) s)"
  else
    echo "   $name: FAILED ($((SECONDS - t)) s)"
    failed+=("$name")
  fi
}

finish() {
  echo "   (image test: $((SECONDS - start)) s in all)"
  if [ ${#failed[@]} -eq 0 ]; then
    echo "image: passed"
    exit 0
  fi
  echo "failed steps: ${failed[*]}"
  echo "image: failed"
  exit 1
}

skipped() {
  echo "   (image test: $((SECONDS - start)) s in all)"
  if [ ${#failed[@]} -ne 0 ]; then
    echo "failed steps: ${failed[*]}"
    echo "image: failed"
    exit 1
  fi
  echo "image: skipped ($*)"
  exit 0
}

# ---- (a) the files, structurally -------------------------------------------------------
# Also writes the Dockerfile's last stage's configuration to $work/config.json, for the
# offline image.
lint() {
  python3 - "$work/config.json" <<'PY'
import fnmatch, json, os, re, shlex, sys, tomllib

problems = []
def need(cond, what):
    if not cond:
        problems.append(what)

# -- Dockerfile: instructions, with continuations joined and comments dropped.
instructions = []
pending = ""
for raw in open("Dockerfile", encoding="utf-8"):
    line = raw.rstrip("\n")
    if line.lstrip().startswith("#"):
        continue
    if line.endswith("\\"):
        pending += line[:-1] + " "
        continue
    line = (pending + line).strip()
    pending = ""
    if line:
        word, _, rest = line.partition(" ")
        instructions.append((word.upper(), rest.strip()))
need(not pending, "Dockerfile: a continuation line at the end")

stages = []
for word, rest in instructions:
    if word == "FROM":
        stages.append({"from": rest, "ins": []})
    elif stages:
        stages[-1]["ins"].append((word, rest))
need(len(stages) >= 2, "Dockerfile: not multi-stage (a builder and a runtime stage)")
builder = next((s for s in stages if re.search(r"\bAS\s+builder\b", s["from"], re.I)), None)
need(builder is not None, "Dockerfile: no stage named builder")
if builder:
    need(re.search(r"rust:", builder["from"]), "Dockerfile: the builder is not a Rust image")
    runs = " ".join(r for w, r in builder["ins"] if w == "RUN")
    need("cargo build --release --locked -p boomerang-local" in runs,
         "Dockerfile: the builder does not run `cargo build --release --locked -p boomerang-local`")
    need("--mount=type=cache" in runs, "Dockerfile: the build has no cache mounts")
final = stages[-1] if stages else {"from": "", "ins": []}
need(re.search(r"debian:\S*slim", final["from"]), "Dockerfile: the runtime stage is not a slim Debian")
last = {}
env = {}
for word, rest in final["ins"]:
    last[word] = rest
    if word == "ENV":
        for item in shlex.split(rest):
            key, _, value = item.partition("=")
            env[key] = value
user = last.get("USER", "")
need(user and user.split(":")[0] not in ("root", "0"), f"Dockerfile: the runtime's USER is not a non-root user ({user or 'none'})")
need(re.fullmatch(r"\d+(:\d+)?", user or "x"), "Dockerfile: USER is not numeric (uid:gid), which runAsNonRoot needs")
need(last.get("EXPOSE", "").split() == ["8080"], "Dockerfile: EXPOSE is not 8080")
need(env.get("BOOMERANG_ADDR") == "0.0.0.0:8080", "Dockerfile: ENV BOOMERANG_ADDR is not 0.0.0.0:8080")
health = last.get("HEALTHCHECK", "")
need("/readyz" in health, "Dockerfile: no HEALTHCHECK on /readyz")
options, cmd = {}, None
m = re.match(r"((?:--\S+\s+)*)CMD\s+(\[.*\])\s*$", health)
need(m, "Dockerfile: the HEALTHCHECK is not `[--options] CMD [json]`")
if m:
    for opt in m.group(1).split():
        key, _, value = opt[2:].partition("=")
        options[key] = value
    cmd = json.loads(m.group(2))
def json_of(word):
    try:
        return json.loads(last.get(word, "null"))
    except json.JSONDecodeError:
        problems.append(f"Dockerfile: {word} is not in JSON (exec) form")
entrypoint, command = json_of("ENTRYPOINT"), json_of("CMD")
need(entrypoint == ["boomerang"], "Dockerfile: the ENTRYPOINT is not [\"boomerang\"]")

# Every COPY from the context names a path that exists, that .dockerignore keeps, and
# together they hold every workspace member and every file the crates include.
ignore = [p.strip().rstrip("/") for p in open(".dockerignore", encoding="utf-8")
          if p.strip() and not p.startswith("#")]
def ignored(path):
    parts = os.path.normpath(path).split("/")
    for pattern in ignore:
        if pattern.startswith("**/"):  # at any depth
            pattern = pattern[3:]
            names = ["/".join(parts[j : i + 1]) for j in range(len(parts)) for i in range(j, len(parts))]
        else:  # from the context's root
            names = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if any(fnmatch.fnmatchcase(name, pattern) for name in names):
            return True
    return False
copied = []
for stage in stages:
    for word, rest in stage["ins"]:
        if word == "COPY" and not rest.startswith("--from"):
            sources = [s for s in rest.split() if not s.startswith("--")][:-1]
            for source in sources:
                need(os.path.exists(source), f"Dockerfile: COPY {source}: no such path")
                need(not ignored(source), f"Dockerfile: COPY {source}: excluded by .dockerignore")
                copied.append(os.path.normpath(source))
def is_copied(path):
    path = os.path.normpath(path)
    return any(path == c or path.startswith(c + "/") for c in copied)
members = tomllib.load(open("Cargo.toml", "rb"))["workspace"]["members"]
for member in members:
    need(is_copied(member), f"Dockerfile: the workspace member {member} is not copied into the builder")
# The members the binary is built from (boomerang-local and its workspace dependencies,
# not their dev-dependencies): every file their sources include must be copied too.
manifests = {m: tomllib.load(open(os.path.join(m, "Cargo.toml"), "rb")) for m in members}
dir_of = {man["package"]["name"]: m for m, man in manifests.items()}
built, todo = set(), ["boomerang-local"]
while todo:
    name = todo.pop()
    if name in built or name not in dir_of:
        continue
    built.add(name)
    todo.extend(manifests[dir_of[name]].get("dependencies", {}))
need("boomerang-local" in built, "Cargo.toml: no workspace member is boomerang-local")
for member in sorted(dir_of[n] for n in built):
    for root, dirs, files in os.walk(os.path.join(member, "src")):
        dirs[:] = [d for d in dirs if d not in ("target", "node_modules")]
        for name in files:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(root, name)
            for inc in re.findall(r'include_(?:str|bytes)!\(\s*"([^"]+)"', open(path, encoding="utf-8").read()):
                target = os.path.relpath(os.path.normpath(os.path.join(root, inc)))
                need(is_copied(target) and not ignored(target),
                     f"Dockerfile: {path} includes {target}, which is not copied into the builder")

# -- compose.yaml
try:
    import yaml
except ImportError:
    sys.path.append("/usr/lib/python3/dist-packages")  # Debian's python3-yaml
    try:
        import yaml
    except ImportError:
        yaml = None
        print("   compose.yaml: no YAML parser (PyYAML, or Debian's python3-yaml): only its text is checked")
text = open("compose.yaml", encoding="utf-8").read()
need(re.search(r"load balancer", text, re.I), "compose.yaml: no note on a load balancer in front")
if yaml:
    doc = yaml.safe_load(text)
    services = doc.get("services", {})
    pg = [n for n, s in services.items() if re.search(r"(^|/)postgres:", str(s.get("image", "")))]
    need(len(pg) == 1, "compose.yaml: not one service on the official postgres image")
    if pg:
        p = services[pg[0]]
        need(p.get("healthcheck", {}).get("test"), "compose.yaml: PostgreSQL has no healthcheck")
        need("fsync=off" not in json.dumps(p).replace(" ", ""), "compose.yaml: PostgreSQL runs with fsync off")
        named = [v.split(":")[0] for v in p.get("volumes", []) if isinstance(v, str) and not v.startswith((".", "/"))]
        need(named and all(v in (doc.get("volumes") or {}) for v in named), "compose.yaml: PostgreSQL's data is not on a named volume")
    servers = {n: s for n, s in services.items() if s.get("build") in (".", {"context": "."}) or "boomerang" in str(s.get("image", ""))}
    need(len(servers) >= 2, "compose.yaml: fewer than two Boomerang servers")
    keys, published = set(), set()
    for name, s in servers.items():
        e = s.get("environment", {})
        need(isinstance(e, dict), f"compose.yaml: {name}: environment is not a mapping")
        e = e if isinstance(e, dict) else {}
        need(e.get("BOOMERANG_BACKEND") == "postgres" or "postgres" in str(s.get("command", "")), f"compose.yaml: {name} is not on the postgres backend")
        need(str(e.get("BOOMERANG_DATABASE_URL", "")).startswith("postgres://"), f"compose.yaml: {name} has no BOOMERANG_DATABASE_URL")
        need(str(e.get("BOOMERANG_API_KEY", "")).startswith("${BOOMERANG_API_KEY"), f"compose.yaml: {name}'s API key is not taken from BOOMERANG_API_KEY")
        keys.add(str(e.get("BOOMERANG_API_KEY")))
        dep = s.get("depends_on", {})
        need(isinstance(dep, dict) and all(dep.get(n, {}).get("condition") == "service_healthy" for n in pg),
             f"compose.yaml: {name} does not wait for PostgreSQL to be healthy")
        for port in s.get("ports", []):
            host, _, inner = str(port).rpartition(":")
            need(inner == "8080", f"compose.yaml: {name} publishes {port}, not the container's 8080")
            published.add(host.rpartition(":")[2])
    need(len(keys) == 1, "compose.yaml: the servers' API keys differ")
    need({"8081", "8082"} <= published, "compose.yaml: the servers are not on ports 8081 and 8082")

for p in problems:
    print("   " + p)
print(f"   Dockerfile: {len(stages)} stages, USER {user}, HEALTHCHECK {' '.join(f'--{k}={v}' for k, v in options.items())}")
json.dump({"user": user, "workdir": last.get("WORKDIR", "/"), "env": env, "expose": last.get("EXPOSE", "").split(),
           "health_cmd": cmd, "health_options": options, "stopsignal": last.get("STOPSIGNAL", ""),
           "entrypoint": entrypoint, "cmd": command}, open(sys.argv[1], "w"))
sys.exit(1 if problems else 0)
PY
}
# compose.yaml is read with PyYAML, or Debian's python3-yaml (installed if neither is there).
if ! python3 -c 'import yaml' 2>/dev/null && [ ! -d /usr/lib/python3/dist-packages/yaml ] &&
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  DEBIAN_FRONTEND=noninteractive timeout 120 apt-get -o DPkg::Lock::Timeout=60 install -y -qq python3-yaml \
    >/dev/null 2>&1 || echo "   (python3-yaml could not be installed)"
fi
step "Dockerfile, .dockerignore and compose.yaml" lint
[ -s "$work/config.json" ] || skipped "the Dockerfile could not be read"

# ---- the tools ---------------------------------------------------------------------------
# buildah and podman, and runc: crun, podman's default runtime on Debian, refuses hosts
# with cgroup v1 and v2 mounted together, where runc runs.
tools() {
  local missing=() tool
  for tool in buildah podman runc; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    command -v buildah >/dev/null && command -v podman >/dev/null && return 0
    why="buildah and podman are missing, and installing them needs root and apt-get"
    return 1
  fi
  echo "   installing ${missing[*]} (Debian's packages)"
  local apt=(apt-get -o DPkg::Lock::Timeout=60 install -y -qq "${missing[@]}")
  if ! DEBIAN_FRONTEND=noninteractive timeout 150 "${apt[@]}" >"$work/apt.log" 2>&1; then
    timeout 60 apt-get -o DPkg::Lock::Timeout=60 update -qq >>"$work/apt.log" 2>&1
    if ! DEBIAN_FRONTEND=noninteractive timeout 150 "${apt[@]}" >>"$work/apt.log" 2>&1; then
      command -v buildah >/dev/null && command -v podman >/dev/null && return 0
      why="buildah and podman could not be installed: $(tail -n 1 "$work/apt.log")"
      return 1
    fi
  fi
}
why=""
tools || skipped "$why"
echo "   $(buildah --version); $(podman --version)"

# ---- (b) the image -------------------------------------------------------------------------
cfg() { python3 -c 'import json, shlex, sys; c = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$work/config.json" "$1"; }
user=$(cfg 'c["user"]')
uid=${user%%:*}
gid=${user#*:}

# The Dockerfile's base images (its ARG defaults filled in), one a line.
base_images() {
  python3 - <<'PY'
import re
text = open("Dockerfile").read()
args = dict(re.findall(r"^ARG\s+(\w+)=(\S+)", text.split("\nFROM", 1)[0], re.M))
for image in re.findall(r"^FROM\s+(\S+)", text, re.M):
    print(re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), ""), image))
PY
}

# Whether the base images can be had: all already here, or their registry answers (200,
# or 401, from /v2/).
bases_available() {
  local image missing=0
  while IFS= read -r image; do
    podman image exists "$image" || missing=1
  done < <(base_images)
  if [ $missing = 0 ]; then
    echo "the base images are here ($(base_images | tr '\n' ' '| sed 's/ $//'))"
    return 0
  fi
  python3 - "$(base_images | head -n 1)" <<'PY'
import sys, urllib.error, urllib.request
first = sys.argv[1].split("/")[0]
host = first if "." in first or ":" in first else "docker.io"
host = "registry-1.docker.io" if host == "docker.io" else host
try:
    urllib.request.urlopen(f"https://{host}/v2/", timeout=5)
except urllib.error.HTTPError as e:
    if e.code != 401:  # a registry asks for a token; anything else is something in between
        print(f"{host} cannot be reached (HTTP {e.code} from /v2/)")
        sys.exit(1)
except Exception as e:
    print(f"{host} cannot be reached ({getattr(e, 'reason', e)})")
    sys.exit(1)
print(f"{host} answers")
PY
}

# The Dockerfile, built for real.
build_full() {
  # chroot isolation: RUN needs no OCI runtime (and so no cgroup setup) on the build host.
  buildah bud --layers --force-rm --format docker --isolation chroot -t "$tag" . && built_image=$tag
}

# The binary the offline image carries.
pick_binary() {
  local target=${CARGO_TARGET_DIR:-target} candidate
  bin=${BOOMERANG_IMAGE_BIN:-}
  if [ -z "$bin" ]; then
    for candidate in "$target/release/boomerang" "$target/debug/boomerang"; do
      [ -x "$candidate" ] && { [ -z "$bin" ] || [ "$candidate" -nt "$bin" ]; } && bin=$candidate
    done
  fi
  if [ -z "$bin" ]; then
    echo "   no boomerang binary built: building the debug one"
    cargo build --locked --bin boomerang || return 1
    bin="$target/debug/boomerang"
  fi
  echo "   binary: $bin ($(du -h "$bin" | cut -f1), built $(date -r "$bin" '+%F %T'))"
}

# The Dockerfile's runtime stage, offline: its files from this machine, its configuration
# from the Dockerfile.
build_offline() {
  pick_binary || return 1
  local root=$work/rootfs bash_bin lib d
  bash_bin=$(command -v bash)
  mkdir -p "$root"/{etc/ssl/certs,tmp,usr/bin,usr/local/bin,var/lib/boomerang}
  # The same merged /usr as Debian's (and this machine's): /bin, /lib and /lib64 as links.
  for d in bin sbin lib lib64; do
    if [ -L "/$d" ]; then
      mkdir -p "$root/$(readlink "/$d")" && ln -s "$(readlink "/$d")" "$root/$d"
    fi
  done
  install -m 0755 "$bin" "$root/usr/local/bin/boomerang"
  install -m 0755 "$bash_bin" "$root/usr/bin/bash"
  for lib in $(ldd "$bin" "$bash_bin" | grep -o '/[^ ]*' | sort -u); do
    case $lib in /*:) continue ;; esac  # ldd's "file:" headings
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib" || return 1
  done
  [ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nboomerang:x:%s:%s:boomerang:/var/lib/boomerang:/usr/sbin/nologin\n' "$uid" "$gid" >"$root/etc/passwd"
  printf 'root:x:0:\nboomerang:x:%s:\n' "$gid" >"$root/etc/group"
  chmod 1777 "$root/tmp"
  chown "$uid:$gid" "$root/var/lib/boomerang"
  chmod 0750 "$root/var/lib/boomerang"
  tar -C "$root" --numeric-owner -cf "$work/rootfs.tar" . || return 1

  working_container=$(buildah from scratch) || return 1
  buildah add --quiet "$working_container" "$work/rootfs.tar" / >/dev/null || return 1
  local args=(--user "$user" --workingdir "$(cfg 'c["workdir"]')"
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    --entrypoint "$(cfg 'json.dumps(c["entrypoint"])')" --cmd "$(cfg 'json.dumps(c["cmd"])')"
    --healthcheck "CMD $(cfg 'shlex.join(c["health_cmd"])')")
  local kv
  while IFS= read -r kv; do args+=(--env "$kv"); done < <(cfg '"\n".join(f"{k}={v}" for k, v in c["env"].items())')
  while IFS= read -r kv; do args+=(--port "$kv"); done < <(cfg '"\n".join(c["expose"])')
  while IFS= read -r kv; do [ -n "$kv" ] && args+=("$kv"); done < <(cfg '"\n".join(f"--healthcheck-{k}={v}" for k, v in c["health_options"].items() if k in ("interval", "timeout", "retries", "start-period"))')
  [ -n "$(cfg 'c["stopsignal"]')" ] && args+=(--stop-signal "$(cfg 'c["stopsignal"]')")
  buildah config "${args[@]}" "$working_container" 2>&1 | grep -v 'HEALTHCHECK is not supported for OCI' >&2
  buildah commit --quiet --format docker "$working_container" "$tag" >/dev/null || return 1
  built_image=$tag
  # buildah takes the check as shell words: it must come out as the Dockerfile's.
  local test
  test=$(podman image inspect "$tag" --format '{{json .HealthCheck.Test}}')
  if ! python3 -c 'import json, sys; sys.exit(json.loads(sys.argv[1]) != ["CMD"] + json.load(open(sys.argv[2]))["health_cmd"])' "$test" "$work/config.json"; then
    echo "   the image's health check is $test, not the Dockerfile's"
    return 1
  fi
  buildah rm "$working_container" >/dev/null && working_container=""
  echo "   image: $tag, $(podman image inspect "$tag" --format '{{.Size}}' | awk '{printf "%.0f MB", $1 / 1e6}')"
}

path=""
if reach=$(bases_available 2>&1); then
  if [ "${BOOMERANG_IMAGE_BUILD:-}" = full ]; then
    echo "   path: the Dockerfile, built for real ($reach; BOOMERANG_IMAGE_BUILD=full)"
    path=full
    step "the Dockerfile, built (buildah bud)" build_full
  else
    echo "   path: offline equivalent ($reach, but a real build compiles the workspace in release inside the builder image, far past this test's budget: set BOOMERANG_IMAGE_BUILD=full for it)"
  fi
else
  echo "   path: offline equivalent (no real build: the base images are not here and cannot be pulled: $reach)"
fi
if [ -z "$path" ]; then
  path=offline
  step "an equivalent image, offline (buildah from scratch)" build_offline
fi
[ -n "$built_image" ] || finish

# ---- run it ----------------------------------------------------------------------------------
# How containers start here: podman's default, or with the resource limits lowered to
# this process's own (a sandbox without CAP_SYS_RESOURCE cannot raise them), or with runc
# (crun refuses hybrid cgroup v1/v2 hosts). The first that runs `--version` is kept.
run_opts=()
run_how() {
  local out status limits=(--ulimit "nofile=$(ulimit -Hn):$(ulimit -Hn)" --ulimit nproc=4096:4096)
  local -a tries=("" "limits")
  command -v runc >/dev/null && tries+=("runc limits")
  local try
  for try in "${tries[@]}"; do
    local opts=(--network none)
    [[ $try == *runc* ]] && opts=(--runtime runc "${opts[@]}")
    [[ $try == *limits* ]] && opts+=("${limits[@]}")
    out=$(podman run --rm --no-healthcheck "${opts[@]}" "$built_image" --version 2>&1)
    status=$?
    if [ $status -eq 0 ]; then
      run_opts=("${opts[@]}")
      echo "   podman run ${opts[*]}: $out"
      return 0
    fi
    echo "   podman run ${opts[*]}: exit $status: $(tail -n 1 <<<"$out")"
    # 125-127: podman or the runtime could not start it; anything else is the image's.
    [ $status -ge 125 ] || return 2
  done
  return 1
}

version_and_user() {
  local out
  out=$(podman run --rm --no-healthcheck "${run_opts[@]}" "$built_image" --version) || return 1
  [[ $out == boomerang\ * ]] || { echo "   --version printed: $out"; return 1; }
  out=$(podman run --rm --no-healthcheck "${run_opts[@]}" --entrypoint bash "$built_image" -c \
    'echo "$UID"; echo "$PWD"; if [ -w "$BOOMERANG_DATA_DIR" ]; then echo writable; else echo "not writable"; fi')
  echo "   in the image: uid $(sed -n 1p <<<"$out"), working directory $(sed -n 2p <<<"$out"), data directory $(sed -n 3p <<<"$out")"
  [ "$(sed -n 1p <<<"$out")" = "$uid" ] && [ "$uid" != 0 ] && [ "$(sed -n 3p <<<"$out")" = writable ]
}

# The image's own HEALTHCHECK, run by podman, passes once the server is up (embedded
# store); the same command fails against a path that answers 404 and a closed port.
health() {
  local t=$SECONDS
  # The check is run here, by `podman healthcheck run`: no timer (that needs systemd).
  podman run -d --name "$container" --health-interval disable "${run_opts[@]}" "$built_image" \
    2> >(grep -v 'systemd connection' >&2) >/dev/null || return 1
  while [ $((SECONDS - t)) -lt 30 ]; do
    if podman healthcheck run "$container" >"$work/health.out" 2>&1; then
      echo "   healthy after $((SECONDS - t)) s; GET /readyz from inside the container:"
      podman exec "$container" bash -c 'exec 3<>/dev/tcp/127.0.0.1/${BOOMERANG_ADDR##*:}
        printf "GET /readyz HTTP/1.0\r\n\r\n" >&3; while IFS= read -r line || [ -n "$line" ]; do echo "$line"; done <&3' |
        tr -d '\r' | sed -n '1p;$p' | sed 's/^/     /'
      local cmd=() status=0
      mapfile -d '' -t cmd < <(cfg '"\0".join(c["health_cmd"])' | head -c -1)
      [ ${#cmd[@]} -gt 1 ] && podman exec "$container" "${cmd[@]}" || status=1
      podman exec "$container" "${cmd[@]//\/readyz//no-such-path}" && status=1
      podman exec -e BOOMERANG_ADDR=127.0.0.1:1 "$container" "${cmd[@]}" 2>/dev/null && status=1
      [ $status = 0 ] && echo "   the same check fails on a 404 and on a closed port"
      return $status
    fi
    if [ "$(podman inspect "$container" --format '{{.State.Running}}')" != true ]; then
      echo "   the server exited:"; podman logs "$container" 2>&1 | tail -n 20
      return 1
    fi
    sleep 0.5
  done
  echo "   not healthy within 30 s: $(tail -n 3 "$work/health.out")"
  podman logs "$container" 2>&1 | tail -n 20
  return 1
}

stops_cleanly() {
  podman stop -t 20 "$container" 2> >(grep -v 'systemd connection' >&2) >/dev/null || return 1
  local code
  code=$(podman inspect "$container" --format '{{.State.ExitCode}}')
  echo "   exit code after SIGTERM: $code"
  podman logs "$container" 2>&1 | grep -m1 'deliveries stopped' | sed 's/^/     /'
  [ "$code" = 0 ]
}

# Where no container can start: the same root filesystem under unshare + chroot, as the
# Dockerfile's user, with the image's environment, on a loopback of its own.
chroot_run() {
  local root=$work/rootfs
  if [ ! -d "$root" ]; then  # the real build's image
    working_container=$(buildah from "$built_image") && root=$(buildah mount "$working_container") || return 1
  fi
  cfg '"\n".join(f"{k}={v}" for k, v in c["env"].items())' >"$work/env"
  cfg '"\0".join(c["health_cmd"])' | head -c -1 >"$work/health"
  unshare --net --pid --fork --mount --mount-proc bash -c '
    root=$1 uid=$2 gid=$3 work=$4
    mapfile -t envs <"$work/env"
    mapfile -d "" -t health <"$work/health"
    ip link set lo up || { echo "   cannot bring the loopback up (ip, from iproute2)"; exit 1; }
    mkdir -p "$root/proc" && mount -t proc proc "$root/proc" || exit 1
    chroot=$(command -v chroot)
    in_root() { (exec_in_root "$@"); }
    # exec: env, then chroot, become the program (the server gets the SIGTERM).
    exec_in_root() {
      exec env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "${envs[@]}" \
        "$chroot" --userspec="$uid:$gid" "$root" "$@"
    }
    version=$(in_root boomerang --version) || exit 1
    echo "   --version: $version"
    user=$(in_root bash -c "echo \$UID")
    echo "   uid in the chroot: $user"
    [ "$user" = "$uid" ] && [ "$user" != 0 ] || exit 1
    exec_in_root boomerang serve >"$work/serve.log" 2>&1 &
    server=$!
    for i in $(seq 1 60); do
      if in_root "${health[@]}" 2>/dev/null; then
        echo "   the HEALTHCHECK passes after ~$((i / 2)) s"
        kill -TERM $server; wait $server; code=$?
        echo "   exit code after SIGTERM: $code"
        exit $code
      fi
      sleep 0.5
    done
    echo "   not healthy within 30 s:"; tail -n 20 "$work/serve.log"; kill -KILL $server; exit 1
  ' chroot-run "$root" "$uid" "$gid" "$work"
}

how_status=0
if [ "${BOOMERANG_IMAGE_RUN:-}" = chroot ]; then
  echo "   BOOMERANG_IMAGE_RUN=chroot: no container is tried"
  how_status=1
else
  run_how || how_status=$?
fi
if [ $how_status -eq 0 ]; then
  echo "   running it: podman ${run_opts[*]}"
  step "boomerang --version, its user and data directory in the image" version_and_user
  step "the HEALTHCHECK (/readyz) passes on an embedded-store server in it" health
  step "it stops on SIGTERM with exit code 0" stops_cleanly
elif [ $how_status -eq 2 ]; then
  failed+=("boomerang --version in the image")
elif [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v chroot >/dev/null; then
  echo "   running it: no container starts here (see above): its root filesystem under unshare + chroot"
  step "--version, the HEALTHCHECK (/readyz) and SIGTERM, under unshare + chroot" chroot_run
else
  skipped "built ($path), but no container starts here and unshare + chroot need root"
fi
finish
