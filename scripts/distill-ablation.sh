#!/usr/bin/env bash
# Soft against hard targets on the same teacher data: trains configs/distill.toml
# twice (distill.targets = soft, then hard), prints each student's held-out
# top-1 agreement with the teacher, then plays the two students against each
# other at --nodes NODES.
#
#   scripts/distill-ablation.sh DATA [EPOCHS=10] [GAMES=100] [NODES=1] [--set KEY=VALUE ...]
#
# DATA is a folder `capa distill gen` wrote for configs/distill.toml's game.
# The runs go to runs/ablation-soft and runs/ablation-hard (RUNS=prefix to
# change), and are resumed if they exist. Binaries come from target/release
# (BIN=folder to change). NODES=1 compares the policies alone. The config's
# [eval] is off (--set eval.every=N turns it back on).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  sed -n '2,12p' "$0" >&2
  exit 2
fi
data=$1
epochs=${2:-10}
games=${3:-100}
nodes=${4:-1}
shift $(($# < 4 ? $# : 4))
bin=${BIN:-target/release}
runs=${RUNS:-runs/ablation}
for tool in capa capa-train; do
  [ -x "$bin/$tool" ] || { echo "no $bin/$tool: run cargo build --release first" >&2; exit 2; }
done
declare -A net
for targets in soft hard; do
  run="$runs-$targets"
  "$bin/capa-train" --config configs/distill.toml --set "run.dir=$run" --set "distill.data=$data" \
    --set "distill.targets=$targets" --set "run.iterations=$epochs" --set eval.every=0 "$@"
  net[$targets]="$run/nets/$(cat "$run/LATEST").safetensors"
  agreement=$(tail -n 1 "$run/metrics.jsonl" | grep -o '"top1_agreement":[0-9.eE+-]*' | cut -d: -f2)
  echo "$targets targets: held-out top-1 agreement $agreement after $epochs epochs (network ${net[$targets]})"
done
"$bin/capa" match "${net[soft]}" "${net[hard]}" --games "$games" --nodes "$nodes" | tail -n 1
