#!/usr/bin/env bash
# Search speed: capa's batched MCTS against Lc0's, both with a free
# evaluator (pseudo-random priors and values from a hash of the position),
# from the start position, 256 leaves per batch, one and two threads.
#
#   benches/search_vs_lc0.sh                      # capa only (chess and Capablanca)
#   LC0=/path/to/lc0 benches/search_vs_lc0.sh     # and Lc0 side by side, with ratios
#   RUNS=5 NODES=200000 (defaults)
#
# Building Lc0 (LeelaChessZero/lc0; measured at commit 909a408, v0.33.0-dev):
#   python3 -m venv venv && venv/bin/pip install meson ninja
#   apt-get install -y libabsl-dev zlib1g-dev pkg-config
#   PATH=$PWD/venv/bin:$PATH meson setup build/release --buildtype=release -Dbuild_backends=false -Dgtest=false
#   ninja -C build/release            # about 10 minutes on one core; the binary is build/release/lc0
#
# Lc0 runs `--backend=random --weights=` with TaskWorkers 0 (without it Lc0
# is about 20x slower on 2 cores), SmartPruningFactor 0, MinibatchSize 256,
# `go nodes $NODES`. Both are timed from outside (user + sys CPU seconds of
# the whole process, start-up included); runs are interleaved so that all
# meet the same background load, and each figure is the $STAT over $RUNS.
# capa with T threads searches T games of NODES/T playouts each (one tree
# per thread: self-play's shape); Lc0 searches one tree with T threads.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
NODES=${NODES:-200000}

cargo build --release --locked -p capa-cli >&2
capa=target/release/capa
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# capa_run VARIANT THREADS: prints "nodes cpu_s bytes_per_node".
capa_run() {
  local cpu
  cpu=$(cpu_seconds "$tmp/capa.out" "$capa" bench search --variant "$1" --nodes "$NODES" --batch 256 --threads "$2")
  awk -v cpu="$cpu" '/^nodes / { print $2, cpu, $NF }' "$tmp/capa.out"
}

# lc0_run THREADS: prints "nodes cpu_s".
lc0_run() {
  rm -f "$tmp/in"
  mkfifo "$tmp/in"
  local TIMEFORMAT='%3U %3S'
  { time "$LC0" --backend=random --weights= --threads="$1" <"$tmp/in" >"$tmp/lc0.out" 2>/dev/null; } 2>"$tmp/lc0.time" &
  local pid=$!
  exec 3>"$tmp/in"
  printf '%s\n' uci "setoption name TaskWorkers value 0" "setoption name SmartPruningFactor value 0" \
    "setoption name MinibatchSize value 256" "setoption name Threads value $1" isready "position startpos" \
    "go nodes $NODES" >&3
  until grep -q '^bestmove' "$tmp/lc0.out" 2>/dev/null; do
    kill -0 "$pid" 2>/dev/null || { echo "lc0 exited before bestmove" >&2; exit 1; }
    sleep 0.05
  done
  echo quit >&3
  exec 3>&-
  wait "$pid"
  local nodes
  nodes=$(grep -E '^info .* nodes [0-9]+' "$tmp/lc0.out" | tail -n 1 | sed -E 's/.* nodes ([0-9]+).*/\1/')
  awk -v n="$nodes" '{ printf "%s %.3f\n", n, $1 + $2 }' "$tmp/lc0.time"
}

configs=("capa chess 1" "capa chess 2" "capa capablanca 1" "capa capablanca 2")
[ -n "${LC0:-}" ] && configs+=("lc0 chess 1" "lc0 chess 2")
for run in $(seq "$RUNS"); do
  for i in "${!configs[@]}"; do
    read -r tool variant threads <<<"${configs[$i]}"
    if [ "$tool" = capa ]; then capa_run "$variant" "$threads"; else lc0_run "$threads"; fi >>"$tmp/config$i"
  done
done

echo "nodes per CPU-second, $STAT of $RUNS interleaved runs, $NODES nodes, batch 256"
printf '%-6s %-11s %7s %15s %14s\n' engine variant threads nodes_per_cpu_s bytes_per_node
declare -A rate
for i in "${!configs[@]}"; do
  read -r tool variant threads <<<"${configs[$i]}"
  rate[$i]=$(awk '{ print $1 / $2 }' "$tmp/config$i" | summary)
  bytes=$(awk '{ print $3 }' "$tmp/config$i" | head -n 1)
  printf '%-6s %-11s %7s %15.0f %14s\n' "$tool" "$variant" "$threads" "${rate[$i]}" "${bytes:--}"
done
if [ -n "${LC0:-}" ]; then
  echo "capa / lc0, chess, 1 thread: $(ratio "${rate[0]}" "${rate[4]}")x"
  echo "capa / lc0, chess, 2 threads: $(ratio "${rate[1]}" "${rate[5]}")x"
fi
