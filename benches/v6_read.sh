#!/usr/bin/env bash
# Reading Lc0 V6 data for supervised training: `capa bench v6` (chunks
# decompressed and decoded by 1 and 2 reader threads through the shuffle
# buffer, then expanded into the network's float planes), and the share of
# a CPU training step spent waiting for data in a short supervised run.
#
#   benches/v6_read.sh                 # the sample PGNs converted; RUNS=3: the median of each figure
#   DATA=/path/to/v6 benches/v6_read.sh   # any V6 files, .tar archives or folders
#
# The issue's bar: at least 50,000 positions/s on 2 cores, and a data wait
# under 2% of a training step. The peer, lczero-training's chunk parser
# (benches/v6_vs_chunkparser.py: 2 worker processes, the same shuffle buffer),
# runs in each run after capa when LCZERO_TRAINING names a checkout of
# lczero-training and PYTHON a Python with numpy (`python3 -m venv /tmp/peer
# && /tmp/peer/bin/pip install numpy`); the ratio is capa's inputs_r2 (planes
# expanded to floats, as the parser's batches hold them) to the parser's.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
source benches/lib.sh
cargo build --release --locked -p capa-cli -p capa-train >&2
capa=target/release/capa
runs=${RUNS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data=${DATA:-}
if [ -z "$data" ]; then
  data=$work/v6
  "$capa" lc0 convert crates/capa-lc0/tests/data/*.pgn --pgn-eval-mode --output-dir "$data" >&2
fi
lines=()
for run in $(seq "$runs"); do
  out=$("$capa" bench v6 "$data" --positions "${POSITIONS:-300000}")
  [ "$run" = 1 ] && echo "$out" | head -n -1
  line=$(echo "$out" | tail -n 1)
  if [ -n "${LCZERO_TRAINING:-}" ]; then
    peer=$(LCZERO_TRAINING=$LCZERO_TRAINING "${PYTHON:-python3}" benches/v6_vs_chunkparser.py "$data" 100000 | tail -n 1)
    line="$line $peer"
  fi
  lines+=("$line")
done
echo "median of $runs runs, positions per second:"
medians=$(printf '%s\n' "${lines[@]}" | median_fields)
echo "$medians"
if [ -n "${LCZERO_TRAINING:-}" ]; then
  awk '{ for (i = 1; i < NF; i += 2) v[$i] = $(i + 1) }
    END { printf "capa inputs_r2 / chunkparser_w2: %.2fx\n", v["inputs_r2"] / v["chunkparser_w2"] }' <<<"$medians"
fi

# The data wait of training: the small chess network on the CPU at batch
# 256, its shuffle buffer filled before the first step.
target/release/capa-train --config configs/supervised-chess.toml --set run.dir="$work/run" \
  --set "supervised.data=[\"$data\"]" --set run.iterations=2 --set train.steps="${STEPS:-30}" \
  --set eval.every=0 --set supervised.shuffle_buffer=20000 2>&1 | grep '^iteration' >&2
echo "data wait share of training, per iteration:"
grep -o '"data_wait_share":[0-9.e-]*' "$work/run/metrics.jsonl" | cut -d: -f2
