#!/usr/bin/env bash
# capa's test command (what .ci/run calls): installs the reference engines the
# cross-checks need and the S3-compatible server the object-store test needs
# where they are missing, then runs every test in release
# mode (deep perft lines need optimised code).
#
#   scripts/test.sh                     # everything CI runs
#   CAPA_SKIP_ENGINE_TESTS=1 scripts/test.sh   # without engines (not for CI)
#   CAPA_SKIP_S3_TESTS=1 scripts/test.sh       # without the S3 server (not for CI)
#   CAPA_SKIP_WGPU_TESTS=1 scripts/test.sh     # without the wgpu backend's tests (not for CI)
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
wgpu_tests=0
if [ $# -eq 0 ] && [ "${CAPA_SKIP_WGPU_TESTS:-}" != 1 ]; then
  wgpu_tests=1
  if ! ls /usr/share/vulkan/icd.d/*.json >/dev/null 2>&1; then
    echo "installing mesa-vulkan-drivers (Debian) for the wgpu tests on the CPU's software Vulkan" >&2
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y mesa-vulkan-drivers
  fi
fi

cargo test --workspace --release --locked "$@"

if [ "$wgpu_tests" = 1 ]; then
  # One build with the wgpu feature, in a profile that builds fast, of only
  # the three test targets that need it: parity with the CPU backend, one
  # training iteration, capa uci. Kernels are compiled on first use;
  # minimal autotuning keeps lavapipe from timing every candidate kernel.
  CUBECL_AUTOTUNE_LEVEL=minimal cargo test --profile wgpu-test --locked \
    -p capa-net -p capa-train -p capa-cli \
    --features capa-net/wgpu,capa-train/wgpu,capa-cli/wgpu --test wgpu
fi
