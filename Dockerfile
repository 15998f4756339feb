# syntax=docker/dockerfile:1
# The `boomerang` server as a container image.
#
#   docker build -t boomerang .            (or: podman build -t boomerang .)
#   docker run --rm -p 8080:8080 boomerang                      embedded store, in the container
#   docker run --rm -p 8080:8080 -e BOOMERANG_API_KEY=… \
#     boomerang serve --backend postgres --database-url postgres://…    several servers
#
# The image runs `boomerang` as an unprivileged user (uid 10001), listens on 0.0.0.0:8080,
# and reports healthy while `GET /readyz` answers 200. The embedded store's data directory
# is /var/lib/boomerang: mount a volume there to keep it across containers. compose.yaml
# runs two servers on PostgreSQL with this image; docs/src/operations/postgres.md is the
# guide. scripts/image-test.sh checks this file and builds an equivalent image offline.

ARG RUST_VERSION=1.95
# The builder's and the runtime's Debian release must be the same (the binary links
# against the builder's glibc).
ARG DEBIAN_RELEASE=bookworm

# ---- builder: the release binary ---------------------------------------------------------
FROM docker.io/library/rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE} AS builder
ARG DEBIAN_RELEASE
WORKDIR /src
# Only what the workspace's crates build from: every member's manifest must be there for
# cargo to load the workspace (and --locked to check Cargo.lock), and nothing else (the
# book, the CDK app's node_modules, the client libraries) can invalidate this layer.
COPY Cargo.toml Cargo.lock ./
COPY shared shared
COPY functions functions
COPY bench bench
COPY tests tests
# The DynamoDB table's layout, which the AWS backend compiles in (include_str!).
COPY infra/lib/table-layout.json infra/lib/table-layout.json
# The crates downloaded and the target directory are cache mounts, kept from one build to
# the next: a change to the sources recompiles only what it touches, and a new Cargo.lock
# downloads only what is new. The binary is copied out of the cache in the same step.
RUN --mount=type=cache,id=boomerang-cargo-registry,target=/usr/local/cargo/registry \
    --mount=type=cache,id=boomerang-cargo-git,target=/usr/local/cargo/git \
    --mount=type=cache,id=boomerang-target-${DEBIAN_RELEASE},target=/src/target \
    cargo build --release --locked -p boomerang-local \
 && install -m 0755 target/release/boomerang /usr/local/bin/boomerang

# ---- runtime: the binary, CA certificates and an unprivileged user -----------------------
FROM docker.io/library/debian:${DEBIAN_RELEASE}-slim AS runtime
# CA certificates: HTTPS callbacks and PostgreSQL's TLS verify against the system's roots
# (or, for the database, against PGSSLROOTCERT when it is set).
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 boomerang \
 && useradd --system --uid 10001 --gid boomerang --home-dir /var/lib/boomerang \
      --no-create-home --shell /usr/sbin/nologin boomerang \
 && install -d -o boomerang -g boomerang -m 0750 /var/lib/boomerang
COPY --from=builder /usr/local/bin/boomerang /usr/local/bin/boomerang
USER 10001:10001
WORKDIR /var/lib/boomerang
ENV BOOMERANG_ADDR=0.0.0.0:8080 \
    BOOMERANG_DATA_DIR=/var/lib/boomerang
EXPOSE 8080
# Healthy while /readyz answers 200 (the store takes writes, the timer runs). The probe is
# bash's /dev/tcp (bash is in every Debian image): no HTTP client in the image, and no
# port to keep in step with BOOMERANG_ADDR, whose port it reads at each check.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${BOOMERANG_ADDR##*:} && printf 'GET /readyz HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && read -r -t 2 _ code _ <&3 && [ \"$code\" = 200 ]"]
# On SIGTERM the server stops taking requests and gives the calls under way
# --shutdown-grace (default 30 s) to end: give `docker stop` longer than that (-t 40, or
# compose's stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["boomerang"]
CMD ["serve"]
