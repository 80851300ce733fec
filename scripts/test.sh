#!/usr/bin/env bash
# capa's test command (what .ci/run calls): installs the reference engines the
# cross-checks need, the S3-compatible server, the browser and the software
# Vulkan driver where they are missing, then builds the workspace once, in
# the `quick-release` profile (optimised, no LTO: the deep perft lines and
# the training tests need optimised code, nobody needs a linked-whole
# binary), with every backend compiled in (the wgpu tests run on lavapipe;
# CUDA is compiled, not run), and runs every test. The workspace's own
# crates are compiled by clippy-driver, so the same build is the lint
# (`-D warnings`): no second build for `cargo clippy`.
#
#   scripts/test.sh                     # everything CI runs
#   CAPA_SKIP_ENGINE_TESTS=1 scripts/test.sh   # without engines (not for CI)
#   CAPA_SKIP_S3_TESTS=1 scripts/test.sh       # without the S3 server (not for CI)
#   CAPA_SKIP_WGPU_TESTS=1 scripts/test.sh     # without the wgpu tests (and the GPU backends) (not for CI)
#   CAPA_SKIP_BROWSER_TESTS=1 scripts/test.sh  # without the GUI's browser test (not for CI)
#   scripts/test.sh -- --ignored deep   # extra arguments go to the test binaries
set -euo pipefail
cd "$(dirname "$0")/.."

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/games/$1" ]; }

missing=()
for engine in fairy-stockfish stockfish sjaakii gnugo; do
  have "$engine" || missing+=("$engine")
done
if [ ${#missing[@]} -gt 0 ] && [ "${CAPA_SKIP_ENGINE_TESTS:-}" != 1 ]; then
  echo "installing ${missing[*]} (Debian packages; binaries land in /usr/games)" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

# The GUI's test drives the page in a real browser: Debian's chromium,
# headless, through chromedriver (chromium-driver).
if { ! have chromium || ! have chromedriver; } && [ "${CAPA_SKIP_BROWSER_TESTS:-}" != 1 ]; then
  echo "installing chromium and chromium-driver (Debian) for the GUI's browser test" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y chromium chromium-driver fonts-dejavu-core
fi

# The object-store test runs a trainer and a worker against an S3-compatible
# server on loopback: moto's, from PyPI, in a virtual environment of its own.
if ! have moto_server && [ -z "${CAPA_MOTO_SERVER:-}" ] && [ "${CAPA_SKIP_S3_TESTS:-}" != 1 ]; then
  venv="${XDG_CACHE_HOME:-$HOME/.cache}/capa/moto"
  if [ ! -x "$venv/bin/moto_server" ]; then
    echo "installing moto[server] (PyPI) into $venv for the object-store test" >&2
    if ! python3 -m venv "$venv" 2>/dev/null; then
      sudo=""
      [ "$(id -u)" = 0 ] || sudo="sudo"
      $sudo apt-get update
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y python3-venv python3-pip
      python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install --quiet 'moto[server]'
  fi
  export CAPA_MOTO_SERVER="$venv/bin/moto_server"
fi

# The wgpu backend's tests run on any Vulkan adapter; on a machine without a
# GPU, on Mesa's software one (lavapipe, in mesa-vulkan-drivers).
features=()
if [ "${CAPA_SKIP_WGPU_TESTS:-}" != 1 ]; then
  features=(--features "capa-cli/wgpu,capa-cli/cuda,capa-train/wgpu,capa-train/cuda")
  if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
    echo "installing mesa-vulkan-drivers (Debian) for the wgpu tests on the CPU's software Vulkan" >&2
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y mesa-vulkan-drivers
  fi
fi

# clippy-driver compiles the workspace's crates (dependencies go to rustc as
# always): its lints are `cargo clippy`'s, and a warning fails the build.
if command -v clippy-driver >/dev/null 2>&1; then
  export RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
else
  echo "clippy-driver not found (rustup component add clippy): building without the lints" >&2
fi

# wgpu compiles and autotunes kernels on first use (lavapipe compiles each
# with LLVM): most of the wgpu tests' time on a fresh machine. Minimal
# autotuning buckets tensor shapes more coarsely, so fewer are tuned; the
# repository's cubecl.toml keeps one autotune cache for every crate.
CUBECL_AUTOTUNE_LEVEL=minimal cargo test --workspace --profile quick-release --locked "${features[@]}" "$@"
