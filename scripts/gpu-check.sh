#!/usr/bin/env bash
# The checks that run on the device machine (one H200 and 16 CPU cores; no
# Rust there). Build here, carry the binary, run this there:
#
#   cargo build --release --locked -p capa-cli        # here
#   run: scripts/gpu-check.sh   carry: target/release/capa
#
# Figures go to $OUT (the device tool brings that folder back). Until the
# network crate lands there is nothing for the GPU itself: this measures
# the search's scaling over the machine's cores, one tree per thread as in
# self-play, and grouped pipelining with many threads.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-target/gpu-check}
mkdir -p "$OUT"
capa=${CAPA:-target/release/capa}
log="$OUT/search-scaling.txt"
{
  echo "cores $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for threads in 1 2 4 8 16; do
    for variant in chess capablanca; do
      echo "threads $threads: $("$capa" bench search --variant "$variant" --nodes $((200000 * threads)) --threads "$threads" | paste -sd ' ')"
    done
  done
  for groups in 1 2; do
    "$capa" bench search --variant chess --nodes 2000000 --games 512 --batch 32 --threads 14 --groups "$groups" \
      --eval-ns-per-leaf 1000 | paste -sd ' '
  done
} 2>&1 | tee "$log"
