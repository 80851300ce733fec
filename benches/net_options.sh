#!/usr/bin/env bash
# The cost of each network option (configs/README.md, "Network architecture")
# against the default at the same size, on the CPU backend: `capa bench net`
# with the option on, interleaved with the default so that both meet the same
# background load, $RUNS rounds (5 unless set), the median of each figure. Prints a table:
# positions per second at batch 1 / 32 / 256 inference and at 256 training,
# and each figure as a ratio to the default's.
#
#   benches/net_options.sh                  # the CPU recipe's network
#   NET="--channels 64 --blocks 1 --transformer-blocks 4" benches/net_options.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh

NET=${NET:---channels 48 --blocks 4 --transformer-blocks 1 --policy-head conv}
SECONDS_PER_CASE=${SECONDS_PER_CASE:-1}
capa=target/release/capa
[ -x "$capa" ] || cargo build --release --locked -p capa-cli

cases=(
  "default|"
  "ffn = swiglu|--ffn swiglu"
  "norm = rms|--norm rms"
  "qk_norm|--qk-norm"
  "qkv_bias = false|--no-qkv-bias"
  "position_embedding|--position-embedding"
  "value head 128 x 256|--value-channels 128 --value-hidden 256"
  "every option|--ffn swiglu --norm rms --qk-norm --no-qkv-bias --position-embedding --value-channels 128 --value-hidden 256"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in $(seq "$RUNS"); do
  for i in "${!cases[@]}"; do
    flags=${cases[$i]#*|}
    # shellcheck disable=SC2086
    "$capa" bench net $NET $flags --seconds "$SECONDS_PER_CASE" | tail -n 1 >>"$tmp/$i"
  done
done

field() { awk -v n="$2" '{ for (i = 1; i < NF; i += 2) if ($i == n) print $(i + 1) }' <<<"$1"; }
default=$(median_fields <"$tmp/0")
echo "network: $NET (batch 256; median of $RUNS rounds)"
echo "| option | inference b1 / b32 / b256 | training b256 | ratio to the default |"
echo "|---|---|---|---|"
for i in "${!cases[@]}"; do
  figures=$(median_fields <"$tmp/$i")
  values=() ratios=()
  for name in infer_b1 infer_b32 infer_b256 train_b256; do
    values+=("$(printf '%.0f' "$(field "$figures" "$name")")")
    ratios+=("$(ratio "$(field "$figures" "$name")" "$(field "$default" "$name")")")
  done
  echo "| ${cases[$i]%%|*} | ${values[0]} / ${values[1]} / ${values[2]} | ${values[3]} | ${ratios[0]} / ${ratios[1]} / ${ratios[2]}; ${ratios[3]} |"
done
