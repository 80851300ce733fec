#!/usr/bin/env bash
# The one command for a bare GPU box (the NVIDIA driver, no Rust, no
# network): checks what CUDA needs at run time, runs the parity tests on
# CUDA, benchmarks the network in each precision and plays one short
# self-play iteration, over binaries built on another machine.
#
#   scripts/gpu-check.sh --build   # here: builds, strips and packs what the box needs
#                                  # into target/gpu-check/carry (at most 64 MiB)
#   scripts/gpu-check.sh           # there, with target/gpu-check/carry carried
#
# The build pins the CUDA API to 12.8 (CUDARC_CUDA_VERSION; drivers from 570
# on have it) and takes about half an hour on 2 cores. cubecl-cuda loads
# libcuda (the driver) and NVRTC (CUDA's runtime compiler, not part of the
# driver) when it starts. `--build` packs NVRTC 12.8 from PyPI's
# nvidia-cuda-nvrtc-cu12 wheel (88 MB; its two libraries xz-compress to
# about 30 MB) unless CAPA_NVRTC_WHEEL names a wheel file or
# CAPA_SKIP_NVRTC=1. On the box, an NVRTC the loader finds, or one in
# CAPA_NVRTC_DIR, is used first; the check says what is missing and how to
# supply it.
#
# The run stops starting new steps after GPU_CHECK_SECONDS (540 by default:
# the device tool allows 600 s a command), so what it measured comes back.
# Everything goes to $OUT (default target/gpu-check/out):
#   preflight.txt       the GPU, the driver, which CUDA libraries load
#   parity.txt          the parity tests on CUDA device 0: every op and a training
#                       step against the CPU backend, in f32, f16 and bf16
#   net-cuda.txt        capa bench net for small and typical, batches 1024 and 4096,
#                       each precision: positions/s, TFLOP/s and the share of peak
#   train-cuda.txt      one short self-play iteration of configs/capablanca.toml:
#                       plies/s and the share of self-play spent in the network
#   search-scaling.txt  the search over the machine's cores
set -uo pipefail
cd "$(dirname "$0")/.."
bin=target/gpu-check/bin
carry=target/gpu-check/carry
nvrtc_version=12.8.93

if [ "${1:-}" = --build ]; then
  set -e
  export CUDARC_CUDA_VERSION=${CUDARC_CUDA_VERSION:-12080}
  cargo build --release --locked -p capa-cli -p capa-train --features capa-cli/cuda,capa-train/cuda
  parity=$(cargo test --release --locked -p capa-net --features cuda --test wgpu --no-run \
    --message-format=json | grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -1)
  rm -rf "$bin" && mkdir -p "$bin" "$carry"
  cp target/release/capa target/release/capa-train "$bin/"
  cp "$parity" "$bin/parity"
  strip "$bin"/*
  # One thread and -9 (a 64 MiB window): the binaries share most of their code.
  tar -C "$bin" -cf - . | xz -9 -T1 > "$carry/capa-bin.tar.xz"
  if [ "${CAPA_SKIP_NVRTC:-0}" != 1 ] && [ ! -s "$carry/nvrtc.tar.xz" ]; then
    work=$(mktemp -d)
    wheel=${CAPA_NVRTC_WHEEL:-}
    if [ -z "$wheel" ]; then
      pip download --quiet --no-deps "nvidia-cuda-nvrtc-cu12==$nvrtc_version" -d "$work"
      wheel=$(ls "$work"/*.whl)
    fi
    python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for name in z.namelist():
    base = name.rsplit("/", 1)[-1]
    if base.startswith(("libnvrtc.so", "libnvrtc-builtins.so")) and ".alt." not in base:
        open(sys.argv[2] + "/" + base, "wb").write(z.read(name))' "$wheel" "$work"
    tar -C "$work" -cf - $(cd "$work" && ls libnvrtc*) | xz -9 -T1 > "$carry/nvrtc.tar.xz"
    rm -rf "$work"
  fi
  du -b "$bin"/* | awk '{ printf "%-40s %6.1f MB unpacked\n", $2, $1 / 1e6 }'
  du -cb "$carry"/* | awk '{ printf "%-40s %6.1f MiB\n", $2, $1 / 1048576 } END { if ($1 > 64 * 1048576) { print "over the 64 MiB the device tool carries"; exit 1 } }'
  exit 0
fi

OUT=${OUT:-target/gpu-check/out}
mkdir -p "$OUT"
say() { echo "$*" | tee -a "$OUT/preflight.txt"; }
: > "$OUT/preflight.txt"

# What CUDA needs at run time, and where the loader finds it.
if nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >> "$OUT/preflight.txt" 2>&1; then
  say "driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
else
  say "no NVIDIA driver answers (nvidia-smi failed): this is not a CUDA machine; nothing to check"
  exit 1
fi
loads() {
  local path=${LD_LIBRARY_PATH:-}
  ldconfig -p 2>/dev/null | grep -q "$1" || { [ -n "$path" ] && ls ${path//:/ } 2>/dev/null | grep -q "^$1"; }
}
# What --build packed, unpacked where this script looks for it.
if [ ! -x "$bin/capa" ] && [ -s "$carry/capa-bin.tar.xz" ]; then
  mkdir -p "$bin" && xz -dc "$carry/capa-bin.tar.xz" | tar -C "$bin" -xf - && say "binaries: unpacked from $carry"
fi
if [ ! -e target/gpu-check/nvrtc ] && [ -s "$carry/nvrtc.tar.xz" ]; then
  mkdir -p target/gpu-check/nvrtc && xz -dc "$carry/nvrtc.tar.xz" | tar -C target/gpu-check/nvrtc -xf -
fi
if loads libcuda.so.1; then
  say "libcuda.so.1: found"
else
  say "libcuda.so.1: MISSING (the driver's library; reinstall the driver): nothing can run"
  exit 1
fi
if ! loads libnvrtc.so; then
  for dir in "${CAPA_NVRTC_DIR:-}" target/gpu-check/nvrtc /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 \
    /usr/lib/x86_64-linux-gnu /opt/conda/lib $(python3 -c 'import nvidia.cuda_nvrtc, os; print(os.path.dirname(nvidia.cuda_nvrtc.__file__) + "/lib")' 2>/dev/null); do
    if [ -n "$dir" ] && ls "$dir"/libnvrtc.so* >/dev/null 2>&1; then
      export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      say "NVRTC: found in $dir (put on LD_LIBRARY_PATH)"
      break
    fi
  done
fi
if loads libnvrtc.so; then
  say "NVRTC: $(ldconfig -p 2>/dev/null | grep -o 'libnvrtc.so[.0-9]*' | head -1 | grep . || echo 'on LD_LIBRARY_PATH,') loads"
else
  say "NVRTC: MISSING. cubecl-cuda compiles every kernel with it. Supply it: install the CUDA toolkit,"
  say "  or copy libnvrtc.so.12 and libnvrtc-builtins.so.12.* (pip's nvidia-cuda-nvrtc-cu12 wheel) into"
  say "  target/gpu-check/nvrtc, or point CAPA_NVRTC_DIR at their folder (scripts/gpu-check.sh --build"
  say "  packs them into $carry); then run this again"
  exit 1
fi
[ -x "$bin/capa" ] || { say "no $bin/capa: build with scripts/gpu-check.sh --build and carry $carry"; exit 1; }

# Steps start only while time is left, each limited to what is left.
deadline=$((SECONDS + ${GPU_CHECK_SECONDS:-540}))
limit() { local left=$((deadline - SECONDS)); [ "$left" -lt "$1" ] && echo "$left" || echo "$1"; }
time_left() { [ $((deadline - SECONDS)) -ge 20 ] || { echo "skipped: out of time"; return 1; }; }

# Peak dense tensor-core TFLOP/s by GPU name (f16/bf16; f32 runs as TF32 at
# half of it, or on CUDA cores at far less): the share of peak is against
# these. PEAK_TFLOPS overrides.
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H200*|*H100*SXM*|*H100\ 80GB\ HBM3*) peak=989 ;;
  *H100*) peak=756 ;;
  *A100*) peak=312 ;;
  *L40S*) peak=362 ;;
  *) peak=0 ;;
esac
peak=${PEAK_TFLOPS:-$peak}
say "gpu: $gpu, peak ${peak} TFLOP/s (f16/bf16 dense; 0: unknown, set PEAK_TFLOPS)"

# Parity first: figures from a GPU that computes something else are worthless.
CUBECL_AUTOTUNE_LEVEL=minimal timeout "$(limit 200)" "$bin/parity" --include-ignored --nocapture --test-threads 1 \
  > "$OUT/parity.txt" 2>&1
echo "parity: exit $? ($(grep -c '^test .* ok$' "$OUT/parity.txt") passed)" | tee -a "$OUT/preflight.txt"

# The network: inference and training by batch and precision, the typical
# network first (the goal is 100,000 positions/s of inference).
{
  for size in typical small; do
    for precision in f16 bf16 f32; do
      for batch in 1024 4096; do
        echo "== size $size precision $precision batch $batch"
        time_left || continue
        timeout "$(limit 60)" "$bin/capa" bench net --backend cuda --size "$size" --precision "$precision" \
          --batch "$batch" --seconds 2 2>&1 | awk -v peak="$peak" '{ print } /tflop_per_s/ && peak > 0 {
            for (i = 1; i < NF; i++) if ($i == "tflop_per_s") printf "  share of peak %.1f%%\n", 100 * $(i + 1) / peak }'
      done
    done
  done
} > "$OUT/net-cuda.txt" 2>&1

# Self-play and training on CUDA: one short iteration of the Capablanca config.
{
  if time_left; then
    timeout "$(limit 150)" "$bin/capa-train" --config configs/capablanca.toml --set run.dir="$OUT/train-run" \
      --set run.backend=cuda --set run.iterations=1 --set selfplay.games=256 --set train.steps=50 2>&1 |
      tr '\r' '\n' | grep -v '^\s*$' | tail -20
    cat "$OUT/train-run/metrics.jsonl" 2>/dev/null
  fi
} > "$OUT/train-cuda.txt" 2>&1
rm -rf "$OUT/train-run"

{
  echo "cores $(nproc), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for threads in 1 4 16; do
    time_left || break
    echo "threads $threads: $(timeout "$(limit 30)" "$bin/capa" bench search --variant capablanca \
      --nodes $((200000 * threads)) --threads "$threads" | paste -sd ' ')"
  done
} > "$OUT/search-scaling.txt" 2>&1
tail -n 3 "$OUT"/*.txt
