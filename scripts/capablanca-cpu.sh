#!/usr/bin/env bash
# The CPU recipe (configs/capablanca-cpu.toml): teacher data from
# Fairy-Stockfish, then distillation epochs and self-play in one run, each
# step resuming where a killed script stopped. Prints the final network.
#
#   scripts/capablanca-cpu.sh            # about 100 minutes on 2 cores
#   GAMES=200 scripts/capablanca-cpu.sh  # fewer teacher games, for a try
set -euo pipefail
cd "$(dirname "$0")/.."
config=configs/capablanca-cpu.toml
run=runs/capablanca-cpu
teacher=$run/teacher
games=${GAMES:-2000}

cargo build --release --bin capa --bin capa-train

# 1. Teacher data: Fairy-Stockfish plays itself at depth 5 from random
#    openings and scores its 8 best moves in every position; one move in ten
#    is a random one, so that the data holds mistakes and their punishment.
resume=()
[ -f "$teacher/generation.txt" ] && resume=(--resume)
target/release/capa distill gen --engine fairy-stockfish --variant capablanca \
  --games "$games" --depth 5 --multipv 8 --explore 0.1 --workers 2 --out "$teacher" "${resume[@]}"

# 2. Distillation epochs, then self-play, with ladder Elo in metrics.jsonl.
target/release/capa-train --config "$config"

echo "final network: $run/nets/$(cat "$run/LATEST").safetensors"
