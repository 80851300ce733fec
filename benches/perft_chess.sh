#!/usr/bin/env bash
# Chess perft: capa (chess through the Game trait, incremental hash included)
# against plain shakmaty (the library it wraps, `perft` called directly) and
# Debian's Stockfish; same positions, one run. All count the last ply in bulk.
#
#   benches/perft_chess.sh             # RUNS=5 by default; STAT=min for best-of-RUNS
#
# Prints leaves per CPU-second (see benches/lib.sh) and capa's ratio to each
# peer; the last lines are the geometric means of the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

cargo build --release --locked -p capa-cli -p capa-rules --example shakmaty_perft >&2
capa=target/release/capa
shakmaty=target/release/examples/shakmaty_perft
sf=$(find_engine stockfish)
capa_perft() { "$capa" perft --variant chess --fen "$1" --depth "$2"; }
shakmaty_perft() { "$shakmaty" "$1" "$2"; }
stockfish_perft() { uci_perft "$sf" "" "$1" "$2"; }

positions=(
  "start|6|119060324|rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
  "kiwipete|5|193690690|r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
  "cpw 3|7|178633661|8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
)

echo "leaves per CPU-second, millions; $STAT of $RUNS interleaved runs"
printf '%-10s %5s %11s %8s %9s %10s %10s %11s\n' position depth leaves capa shakmaty stockfish /shakmaty /stockfish
to_shakmaty=() to_stockfish=()
for entry in "${positions[@]}"; do
  IFS='|' read -r name depth nodes fen <<<"$entry"
  read -r ours shak sfm < <(measure "$fen" "$depth" "$nodes" capa_perft shakmaty_perft stockfish_perft)
  to_shakmaty+=("$(ratio "$ours" "$shak")")
  to_stockfish+=("$(ratio "$ours" "$sfm")")
  printf '%-10s %5s %11s %8s %9s %10s %9sx %10sx\n' "$name" "$depth" "$nodes" "$ours" "$shak" "$sfm" "${to_shakmaty[-1]}" "${to_stockfish[-1]}"
done
echo "capa / shakmaty, geometric mean: $(geomean "${to_shakmaty[@]}")x"
echo "capa / stockfish, geometric mean: $(geomean "${to_stockfish[@]}")x"
