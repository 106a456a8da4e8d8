#!/usr/bin/env bash
# Builds the action's image for tests/container: installs docker.io and debootstrap when
# missing, starts dockerd when no daemon answers, makes a Debian base image with debootstrap
# (no image registry is reachable here), then `docker build`s the Dockerfile on that base.
# Cached: the base image is made once per machine; the build reuses Docker's layer cache.
# See docs/container.md. Prints the image tag on its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

base="${AXL_BASE_IMAGE:-axl-eval-base:bookworm}"
image="${AXL_ACTION_IMAGE:-axl-eval-action:ci}"
log_dir="${AXL_CI_CACHE:-/var/cache/axl-eval-ci}"
mkdir -p "$log_dir"

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends docker.io debootstrap >/dev/null
fi
# Debian's client has BuildKit built in; a newer client elsewhere on PATH needs the buildx
# plugin for BuildKit (and so for build secrets), which may not be installed.
docker=/usr/bin/docker
[ -x "$docker" ] || docker=$(command -v docker)

if ! "$docker" info >/dev/null 2>&1; then
  # No bridge and no iptables: the sandbox allows neither; containers use --network host.
  nohup dockerd --storage-driver=vfs --iptables=false --ip6tables=false --bridge=none \
    >"$log_dir/dockerd.log" 2>&1 &
  for _ in $(seq 60); do "$docker" info >/dev/null 2>&1 && break; sleep 1; done
  "$docker" info >/dev/null 2>&1 || { tail -n 30 "$log_dir/dockerd.log" >&2; echo "dockerd did not start" >&2; exit 1; }
fi

if ! "$docker" image inspect "$base" >/dev/null 2>&1; then
  start=$(date +%s)
  root=$(mktemp -d)
  debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
    bookworm "$root" >"$log_dir/debootstrap.log" 2>&1 || { tail -n 30 "$log_dir/debootstrap.log" >&2; exit 1; }
  tar -C "$root" -c . | "$docker" import - "$base" >/dev/null
  rm -rf "$root"
  echo "base image $base made in $(($(date +%s) - start))s" >&2
fi

# HTTPS to the package index may go through a TLS-inspecting proxy: pip in the build gets the
# host's CA bundle as a build secret (never stored in a layer). Proxy variables pass as the
# predefined build args when set.
ca=""
for candidate in "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
  if [ -n "$candidate" ] && [ -s "$candidate" ]; then ca=$candidate; break; fi
done
args=(--network host --build-arg "BASE_IMAGE=$base" -t "$image")
[ -n "$ca" ] && args+=(--secret "id=ca,src=$ca")
for var in HTTPS_PROXY HTTP_PROXY NO_PROXY https_proxy http_proxy no_proxy; do
  [ -n "${!var:-}" ] && args+=(--build-arg "$var")
done
start=$(date +%s)
DOCKER_BUILDKIT=1 "$docker" build "${args[@]}" . >"$log_dir/docker-build.log" 2>&1 ||
  { tail -n 40 "$log_dir/docker-build.log" >&2; echo "docker build failed" >&2; exit 1; }
echo "image $image built in $(($(date +%s) - start))s" >&2
"$docker" run --rm --network host "$image" --version >&2
echo "$image"
