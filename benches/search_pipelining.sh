#!/usr/bin/env bash
# Grouped pipelining: many games searched against a slow fake network, with
# the games in one group (select, wait for the network, back up, repeat)
# and in two or four (the CPU works on one group while the network works
# on another). The fake network sleeps $EVAL_NS_PER_LEAF per leaf of each
# batch, using no CPU, like a GPU would.
#
#   benches/search_pipelining.sh        # RUNS=5 GAMES=64 BATCH=32 NODES=200000 EVAL_NS_PER_LEAF=4000
#
# Prints wall-clock playouts per second for each grouping ($STAT of $RUNS
# interleaved runs) and the gain over one group. With the network's time
# per batch close to the CPU's, two groups approach 2x.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
GAMES=${GAMES:-64} BATCH=${BATCH:-32} NODES=${NODES:-200000} EVAL_NS_PER_LEAF=${EVAL_NS_PER_LEAF:-4000}
VARIANT=${VARIANT:-chess}

cargo build --release --locked -p capa-cli >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
groupings=(1 2 4)
for run in $(seq "$RUNS"); do
  for g in "${groupings[@]}"; do
    target/release/capa bench search --variant "$VARIANT" --nodes "$NODES" --games "$GAMES" --batch "$BATCH" \
      --groups "$g" --eval-ns-per-leaf "$EVAL_NS_PER_LEAF" | awk '/^variant/ { for (i = 1; i < NF; i++) if ($i == "nodes_per_s") print $(i + 1) }' >>"$tmp/$g"
  done
done
echo "$VARIANT, $GAMES games x $BATCH leaves, fake network ${EVAL_NS_PER_LEAF} ns per leaf; $STAT of $RUNS runs"
printf '%-7s %12s %8s\n' groups nodes_per_s gain
one=$(summary <"$tmp/1")
for g in "${groupings[@]}"; do
  rate=$(summary <"$tmp/$g")
  printf '%-7s %12.0f %7sx\n' "$g" "$rate" "$(ratio "$rate" "$one")"
done
