#!/usr/bin/env bash
# The checks that run on the device machine (one NVIDIA GPU and many CPU
# cores; no Rust and no network there). Build here, strip, carry, run there:
#
#   cargo build --release --locked -p capa-cli --features cuda     # here
#   strip target/release/capa                                      # the carried tree is limited to 64 MiB
#   run: scripts/gpu-check.sh OUT_DIR   carry: target/release/capa
#
# Figures go to OUT_DIR (default $OUT, which the device tool brings back):
#   net-cuda.txt        capa bench net on CUDA, small and typical configs
#   net-vs-torch.txt    the same against PyTorch on the same GPU (when torch is there)
#   search-scaling.txt  the search over the machine's cores
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-target/gpu-check}}
mkdir -p "$OUT"
capa=${CAPA:-target/release/capa}
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
