#!/usr/bin/env bash
# PGN to Lc0 V6 conversion throughput: `capa bench lc0` on the sample PGNs
# (repeated REPEAT times, 20 by default), each stage on one thread, then the
# whole conversion to files with 1 and 2 threads.
#
#   benches/lc0_convert.sh             # RUNS=3 by default: the median of each figure
#
# The issue's bar is 20,000 positions per second with 2 threads on the
# project's 2-core machine. There is no peer in this run: trainingdata-tool
# needs its lc0 fork built from source (C++, meson) and a network to fetch
# it, which this machine does not have.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
source benches/lib.sh
cargo build --release --locked -p capa-cli >&2
capa=target/release/capa
runs=${RUNS:-3}
repeat=${REPEAT:-20}
lines=()
for run in $(seq "$runs"); do
  out=$("$capa" bench lc0 crates/capa-lc0/tests/data/*.pgn --repeat "$repeat")
  [ "$run" = 1 ] && echo "$out" | head -n -1
  lines+=("$(echo "$out" | tail -n 1)")
done
echo "median of $runs runs, positions per second:"
printf '%s\n' "${lines[@]}" | median_fields
