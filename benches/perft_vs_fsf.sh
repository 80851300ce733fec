#!/usr/bin/env bash
# Capablanca perft: capa against Debian's Fairy-Stockfish, same positions,
# same machine, one run. Both count the last ply in bulk (the number of legal
# moves, not playing them), as Fairy-Stockfish's `go perft` does.
#
#   benches/perft_vs_fsf.sh            # RUNS=5 by default; STAT=min for best-of-RUNS
#
# Prints leaves per CPU-second (see benches/lib.sh) for each side and capa's
# ratio; the last line is the geometric mean of the ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

cargo build --release --locked -p capa-cli >&2
capa=target/release/capa
fsf=$(find_engine fairy-stockfish)
capa_perft() { "$capa" perft --variant capablanca --fen "$1" --depth "$2"; }
fsf_perft() { uci_perft "$fsf" capablanca "$1" "$2"; }

positions=(
  "start|5|28741319|rnabqkbcnr/pppppppppp/10/10/10/10/PPPPPPPPPP/RNABQKBCNR w KQkq - 0 1"
  "castling open|5|26548436|r4k3r/pppppppppp/10/10/10/10/PPPPPPPPPP/R4K3R w KQkq - 0 1"
  "archbishop check|5|16419047|r4k3r/ppppp1pppp/5c4/10/4N5/5Na3/PPPP3PPP/R4K3R w KQkq - 0 1"
)

echo "leaves per CPU-second, millions; $STAT of $RUNS interleaved runs"
printf '%-18s %5s %11s %8s %8s %7s\n' position depth leaves capa fsf ratio
ratios=()
for entry in "${positions[@]}"; do
  IFS='|' read -r name depth nodes fen <<<"$entry"
  read -r ours theirs < <(measure "$fen" "$depth" "$nodes" capa_perft fsf_perft)
  ratios+=("$(ratio "$ours" "$theirs")")
  printf '%-18s %5s %11s %8s %8s %6sx\n' "$name" "$depth" "$nodes" "$ours" "$theirs" "${ratios[-1]}"
done
echo "capa / fairy-stockfish, geometric mean: $(geomean "${ratios[@]}")x"
