#!/usr/bin/env bash
# Chess perft overhead of the Game trait, in instructions rather than time:
# capa (chess through the trait) against plain shakmaty perft, counted by
# valgrind's callgrind. Instruction counts repeat exactly from run to run, so
# this is the figure to trust on a noisy shared machine; benches/perft_chess.sh
# gives the timed one.
#
#   benches/perft_chess_instructions.sh    # needs valgrind (apt-get install -y valgrind)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not found: apt-get install -y valgrind" >&2; exit 1; }

cargo build --release --locked -p capa-cli -p capa-rules --example shakmaty_perft >&2

instructions() {
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null |
    awk '/Collected/ { print $NF }'
}

positions=(
  "start|5|rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"
  "kiwipete|4|r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1"
  "cpw 3|6|8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
)
printf '%-10s %5s %14s %14s %17s\n' position depth capa shakmaty "capa / shakmaty"
for entry in "${positions[@]}"; do
  IFS='|' read -r name depth fen <<<"$entry"
  ours=$(instructions target/release/capa perft --variant chess --fen "$fen" --depth "$depth")
  theirs=$(instructions target/release/examples/shakmaty_perft "$fen" "$depth")
  printf '%-10s %5s %14s %14s %16sx\n' "$name" "$depth" "$ours" "$theirs" \
    "$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.3f", a / b }')"
done
echo "(a ratio above 1 means capa executes more instructions: the trait's cost)"
