#!/usr/bin/env bash
# The checks that run on the device machine (one NVIDIA GPU and many CPU
# cores; no Rust and no network there). Build here, strip, carry, run there:
#
#   cargo build --release --locked -p capa-cli -p capa-train --features cuda   # here
#   strip target/release/capa target/release/capa-train             # the carried tree is limited to 64 MiB
#   run: scripts/gpu-check.sh OUT_DIR   carry: target/release/capa target/release/capa-train
#
# Figures go to OUT_DIR (default $OUT, which the device tool brings back):
#   net-cuda.txt        capa bench net on CUDA, small and typical configs
#   net-vs-torch.txt    the same against PyTorch on the same GPU (when torch is there)
#   search-scaling.txt  the search over the machine's cores
#   train-cuda.txt      one iteration of configs/capablanca.toml (fewer games), metrics.jsonl
#   uci-cuda.txt        capa uci on CUDA: a match of that iteration's network against itself
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-target/gpu-check}}
mkdir -p "$OUT"
capa=${CAPA:-target/release/capa}
capa_train=${CAPA_TRAIN:-target/release/capa-train}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt" 2>&1 || true

# The network on the GPU first: it is what this machine is for.
{
  for size in small typical; do
    for variant in capablanca chess; do
      echo "size $size variant $variant: $("$capa" bench net --backend cuda --size "$size" --variant "$variant" --batch 256 --seconds 3 | paste -sd ' ')"
    done
  done
  "$capa" bench net --backend cuda --size typical --batch 1024 --seconds 3 | paste -sd ' '
} 2>&1 | tee "$OUT/net-cuda.txt"

if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
  for size in small typical; do
    CAPA="$capa" BACKEND=cuda SIZE="$size" SECONDS=3 python3 benches/net_vs_torch.py
  done 2>&1 | tee "$OUT/net-vs-torch.txt"
fi

{
  echo "cores $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for threads in 1 4 16; do
    for variant in chess capablanca; do
      echo "threads $threads: $("$capa" bench search --variant "$variant" --nodes $((200000 * threads)) --threads "$threads" | paste -sd ' ')"
    done
  done
} 2>&1 | tee "$OUT/search-scaling.txt"

# The trainer on the typical config: self-play positions per second, the
# share of the network in self-play, training speed (one short iteration).
if [ -x "$capa_train" ]; then
  {
    "$capa_train" --config configs/capablanca.toml --set run.dir="$OUT/train-run" --set run.iterations=1 \
      --set selfplay.games=256 --set train.steps=50
    cat "$OUT/train-run/metrics.jsonl"
  } 2>&1 | tr '\r' '\n' | grep -v '^\s*$' | tail -20 | tee "$OUT/train-cuda.txt"
fi

# The UCI engine on CUDA: the trained network against itself through
# `capa match` (two `capa uci` processes on the GPU), 800 nodes a move.
if [ -x "$capa_train" ] && [ -d "$OUT/train-run/nets" ]; then
  net=$(ls "$OUT/train-run/nets"/*.safetensors | head -1)
  "$capa" match "$net" "$net" --games 4 --nodes 800 --backend cuda --ply-cap 120 2>&1 | tail -3 | tee "$OUT/uci-cuda.txt"
fi
rm -rf "$OUT/train-run"
