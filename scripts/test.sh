#!/usr/bin/env bash
# capa's test command (what .ci/run calls): installs the reference engines the
# cross-checks need where they are missing, then runs every test in release
# mode (deep perft lines need optimised code).
#
#   scripts/test.sh                     # everything CI runs
#   CAPA_SKIP_ENGINE_TESTS=1 scripts/test.sh   # without engines (not for CI)
#   scripts/test.sh -- --ignored deep   # extra arguments go to the test binaries
set -euo pipefail
cd "$(dirname "$0")/.."

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/games/$1" ]; }

missing=()
for engine in fairy-stockfish stockfish sjaakii; do
  have "$engine" || missing+=("$engine")
done
if [ ${#missing[@]} -gt 0 ] && [ "${CAPA_SKIP_ENGINE_TESTS:-}" != 1 ]; then
  echo "installing ${missing[*]} (Debian packages; binaries land in /usr/games)" >&2
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
fi

cargo test --workspace --release --locked "$@"
