#!/usr/bin/env bash
# A teacher recipe: teacher data from an engine, then distillation epochs and
# self-play in one run of CONFIG, each step resuming where a killed script
# stopped. Prints the final network. scripts/capablanca-cpu.sh and
# scripts/chess-cpu.sh call it; with LC0=1 the final network is also written
# as Lc0's weights file beside it (Lc0's network family only).
#
#   scripts/teacher-recipe.sh CONFIG ENGINE VARIANT
#
# The teacher's games come in stages, with one distillation epoch on what is
# there after each of the first ones, so that the run's first ladder Elo
# lands within 30 minutes and the next ones follow at least that often.
# GAMES sets the teacher's games (5,000; fewer for a try); CAPA_BIN_DIR, a
# folder with capa and capa-train already built (else a release build).
set -euo pipefail
cd "$(dirname "$0")/.."
config=$1 engine=$2 variant=$3
run=$(sed -n 's/^dir *= *"\(.*\)"/\1/p' "$config" | head -1)
teacher=$(sed -n 's/^data *= *"\(.*\)"/\1/p' "$config" | head -1)
games=${GAMES:-5000}

bin=${CAPA_BIN_DIR:-target/release}
[ -n "${CAPA_BIN_DIR:-}" ] || cargo build --release --bin capa --bin capa-train

# Teacher data up to $1 games: the engine plays itself at depth 5 from
# random openings and scores its 8 best moves in every position; one move in
# ten is a random one, so that the data holds mistakes and their punishment.
teacher_games() {
  local resume=()
  [ -f "$teacher/generation.txt" ] && resume=(--resume)
  "$bin"/capa distill gen --engine "$engine" --variant "$variant" \
    --games "$1" --depth 5 --multipv 8 --explore 0.1 --workers 2 --out "$teacher" "${resume[@]}"
}

# Epoch 1 on the first 3/8 of the games, epoch 2 on the first 11/16, then
# the remaining epochs on all of them, then self-play; every iteration
# writes its network's ladder Elo into metrics.jsonl.
epoch=1
for stage in $((games * 3 / 8)) $((games * 11 / 16)); do
  teacher_games "$stage"
  "$bin"/capa-train --config "$config" --set run.iterations=$epoch
  epoch=$((epoch + 1))
done
teacher_games "$games"
"$bin"/capa-train --config "$config"

net=$run/nets/$(cat "$run/LATEST")
echo "final network: $net.safetensors"
if [ "${LC0:-0}" = 1 ]; then
  "$bin"/capa net export-lc0 "$net.safetensors" --out "$net.pb.gz"
  echo "for lc0: $net.pb.gz"
fi
