#!/usr/bin/env bash
# The CPU recipe (configs/capablanca-cpu.toml): teacher data from
# Fairy-Stockfish, then distillation epochs and self-play in one run, each
# step resuming where a killed script stopped. Prints the final network.
#
# The teacher's games come in stages, with one distillation epoch on what is
# there after each of the first ones, so that the run's first ladder Elo
# lands within 30 minutes and the next ones follow at least that often.
#
#   scripts/capablanca-cpu.sh            # about 115 minutes on 2 cores
#   GAMES=400 scripts/capablanca-cpu.sh  # fewer teacher games, for a try
set -euo pipefail
cd "$(dirname "$0")/.."
config=configs/capablanca-cpu.toml
run=runs/capablanca-cpu
teacher=$run/teacher
games=${GAMES:-5000}

cargo build --release --bin capa --bin capa-train

# Teacher data up to $1 games: Fairy-Stockfish plays itself at depth 5 from
# random openings and scores its 8 best moves in every position; one move in
# ten is a random one, so that the data holds mistakes and their punishment.
teacher_games() {
  local resume=()
  [ -f "$teacher/generation.txt" ] && resume=(--resume)
  target/release/capa distill gen --engine fairy-stockfish --variant capablanca \
    --games "$1" --depth 5 --multipv 8 --explore 0.1 --workers 2 --out "$teacher" "${resume[@]}"
}

# Epoch 1 on the first 3/8 of the games, epoch 2 on the first 11/16, then
# the remaining epochs on all of them, then self-play; every iteration
# writes its network's ladder Elo into metrics.jsonl.
epoch=1
for stage in $((games * 3 / 8)) $((games * 11 / 16)); do
  teacher_games "$stage"
  target/release/capa-train --config "$config" --set run.iterations=$epoch
  epoch=$((epoch + 1))
done
teacher_games "$games"
target/release/capa-train --config "$config"

echo "final network: $run/nets/$(cat "$run/LATEST").safetensors"
