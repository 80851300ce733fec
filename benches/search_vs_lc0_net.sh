#!/usr/bin/env bash
# capa and Lc0 on the same network (issue 51): search nodes per CPU-second
# and self-play training positions per CPU-second, each as a ratio.
#
#   benches/search_vs_lc0_net.sh                  # nets/chess-cpu.safetensors
#   NET=my.safetensors benches/search_vs_lc0_net.sh   # an Lc0-family chess network
#   CAPA_BIN_DIR=target/quick-release ...           # capa already built there
#   RUNS=3 NODES=4000 BATCH=32 GAMES=8 VISITS=64 (defaults)
#
# The network is exported with `capa net export-lc0` and lc0 (built from
# source once, `lc0_binary` in benches/lib.sh) runs the export on its BLAS
# backend with one thread (OPENBLAS_NUM_THREADS=1); capa runs the
# .safetensors on its CPU backend. Both are timed from outside (user + sys
# CPU seconds of the whole process, start-up included), runs interleaved so
# that both meet the same background load; each figure is the $STAT over
# $RUNS runs.
#
# Search: one process per engine and run searches POSITIONS (the start and
# three positions from the sample games) with `go nodes $NODES`, one search
# thread, $BATCH leaves per network batch, the evaluation cache at each
# engine's default; nodes are each search's last `info ... nodes`.
# Self-play: $GAMES games at once, $VISITS visits a move (root visits,
# reused ones included, the limit both count), Dirichlet noise 0.3 at 0.25,
# temperature 1 for 16 plies then 0.3, no resignation, every move a
# training position: `lc0 selfplay --visits` against `capa bench selfplay`
# with configs/chess-cpu.toml's search as PUCT with
# `selfplay.fast_probability=0`; positions are the games' plies.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
NODES=${NODES:-4000}
BATCH=${BATCH:-32}
GAMES=${GAMES:-8}
VISITS=${VISITS:-64}
export OPENBLAS_NUM_THREADS=1

bin=$(capa_bin_dir)
lc0=$(lc0_binary)
net=${NET:-nets/chess-cpu.safetensors}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin/capa" net export-lc0 "$net" --out "$tmp/net.pb.gz" >/dev/null

POSITIONS=(
  "startpos"
  "fen r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4"
  "fen r2q1rk1/pp2bppp/2n1pn2/3p4/3P4/2NBPN2/PP3PPP/R2Q1RK1 w - - 0 10"
  "fen 8/5pk1/6p1/3R4/5P2/6PK/r7/8 b - - 0 45"
)

# uci_search OPTIONS CMD...: one engine process searches every position;
# prints "nodes cpu_s". OPTIONS is a list of `name=value`, one per line.
uci_search() {
  local options=$1; shift
  rm -f "$tmp/in"
  mkfifo "$tmp/in"
  local TIMEFORMAT='%3U %3S'
  { time "$@" <"$tmp/in" >"$tmp/uci.out" 2>/dev/null; } 2>"$tmp/uci.time" &
  local pid=$! searched=0 position
  exec 3>"$tmp/in"
  echo uci >&3
  while IFS='=' read -r name value; do
    [ -n "$name" ] && echo "setoption name $name value $value" >&3
  done <<<"$options"
  for position in "${POSITIONS[@]}"; do
    printf '%s\n' ucinewgame "position $position" "go nodes $NODES" >&3
    searched=$((searched + 1))
    until [ "$(grep -c '^bestmove' "$tmp/uci.out" 2>/dev/null)" -ge "$searched" ]; do
      kill -0 "$pid" 2>/dev/null || { echo "$1 exited before bestmove" >&2; exit 1; }
      sleep 0.05
    done
  done
  echo quit >&3
  exec 3>&-
  wait "$pid"
  # Each search's nodes: the last `info ... nodes` before its bestmove.
  awk '/^info .* nodes [0-9]+/ { for (i = 1; i < NF; i++) if ($i == "nodes") n = $(i + 1) }
       /^bestmove/ { total += n; n = 0 } END { print total }' "$tmp/uci.out" >"$tmp/nodes"
  awk -v n="$(cat "$tmp/nodes")" '{ printf "%s %.3f\n", n, $1 + $2 }' "$tmp/uci.time"
}

capa_search() {
  uci_search "Threads=1
MinibatchSize=$BATCH" "$bin/capa" uci --net "$net"
}

lc0_search() {
  uci_search "Threads=1
MinibatchSize=$BATCH
SmartPruningFactor=0" "$lc0" --weights="$tmp/net.pb.gz" --backend=blas
}

# capa_selfplay / lc0_selfplay: print "positions cpu_s".
capa_selfplay() {
  local cpu
  cpu=$(cpu_seconds "$tmp/capa-selfplay.out" "$bin/capa" bench selfplay --config configs/chess-cpu.toml \
    --net "$net" --games "$GAMES" --set selfplay.search=puct --set selfplay.simulations="$VISITS" \
    --set selfplay.fast_probability=0 --set selfplay.resign_disabled_fraction=1)
  awk -v cpu="$cpu" '/^positions / { print $2, cpu }' "$tmp/capa-selfplay.out"
}

lc0_selfplay() {
  local cpu
  cpu=$(cpu_seconds "$tmp/lc0-selfplay.out" "$lc0" selfplay --weights="$tmp/net.pb.gz" --backend=blas \
    --threads=1 --games="$GAMES" --parallelism="$GAMES" --visits="$VISITS" --minibatch-size="$BATCH" \
    --noise-epsilon=0.25 --noise-alpha=0.3 --temperature=1 --temp-cutoff-move=16 --temp-endgame=0.3)
  awk -v cpu="$cpu" '/^tournamentstatus final/ { for (i = 1; i < NF; i++) if ($i == "moves") print $(i + 1), cpu }' \
    "$tmp/lc0-selfplay.out"
}

configs=(capa_search lc0_search capa_selfplay lc0_selfplay)
for run in $(seq "$RUNS"); do
  for config in "${configs[@]}"; do
    "$config" >>"$tmp/$config"
  done
done

echo "same network ($net), $STAT of $RUNS interleaved runs, per CPU-second (user + sys)"
declare -A rate
for config in "${configs[@]}"; do
  rate[$config]=$(awk '{ print $1 / $2 }' "$tmp/$config" | summary)
  printf '%-14s %10.1f  (%s)\n' "$config" "${rate[$config]}" "$(tr '\n' ';' <"$tmp/$config")"
done
echo "search nodes per CPU-second, go nodes $NODES, batch $BATCH: capa / lc0 $(ratio "${rate[capa_search]}" "${rate[lc0_search]}")x"
echo "self-play positions per CPU-second, $GAMES games, $VISITS visits: capa / lc0 $(ratio "${rate[capa_selfplay]}" "${rate[lc0_selfplay]}")x"
