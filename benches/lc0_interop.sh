#!/usr/bin/env bash
# lc0 itself as the oracle of `capa net export-lc0` (issue 51):
#
#   benches/lc0_interop.sh                 # build lc0 once, train a small net, compare, play
#   NET=my.safetensors benches/lc0_interop.sh   # an Lc0-family chess network of your own
#   CAPA_BIN_DIR=target/quick-release ...       # capa already built there
#
# 1. Builds lc0 from source with its CPU backend into target/lc0/, once
#    (`lc0_binary` in benches/lib.sh says what it needs).
# 2. Without NET, trains a small network of the Lc0 family (`preset =
#    "lc0"`, 64 channels, 6 blocks) from the sample PGNs for 200 steps
#    (configs/supervised-chess.toml), so that its outputs are far from
#    uniform.
# 3. Exports it (`capa net export-lc0`), checks that `capa net import-lc0`
#    of the export is read back exactly, and compares lc0's priors and value
#    with capa's on POSITIONS positions from the sample PGNs (`capa bench
#    lc0-agreement`). The issue's bar: priors within 0.1 percentage point,
#    the value within 0.005.
# 4. Plays GAMES games, lc0 with the weights file against Stockfish
#    (UCI_Elo 1350, the lowest of Debian's Stockfish 15.1, 100 ms a move), to the end.
set -euo pipefail
cd "$(dirname "$0")/.."
source benches/lib.sh
POSITIONS=${POSITIONS:-1000}
GAMES=${GAMES:-2}
work=target/lc0
mkdir -p "$work"

bin=$(capa_bin_dir)
capa=$bin/capa

lc0=$(lc0_binary)

net=${NET:-}
if [ -z "$net" ]; then
  data=$work/v6
  [ -d "$data" ] || "$capa" lc0 convert ../shared/data/pgn/*.pgn --pgn-eval-mode --output-dir "$data" >&2
  rm -rf "$work/run"
  "$bin"/capa-train --config configs/supervised-chess.toml --set run.dir="$work/run" \
    --set "supervised.data=[\"$data\"]" --set net.preset=lc0 --set run.iterations=2 --set eval.every=0 >&2
  net=$work/run/nets/$(cat "$work/run/LATEST").safetensors
fi

"$capa" net export-lc0 "$net" --out "$work/net.pb.gz"
"$capa" net import-lc0 "$work/net.pb.gz" --out "$work/imported.safetensors" >/dev/null
"$capa" net export-lc0 "$work/imported.safetensors" --out "$work/again.pb.gz" >/dev/null
if cmp -s <(gzip -dc "$work/net.pb.gz") <(gzip -dc "$work/again.pb.gz"); then
  echo "import of the export: exact (exported again, the same bytes)"
else
  echo "import of the export: NOT exact"
fi

"$capa" bench lc0-agreement --lc0 "$lc0 --weights=$work/net.pb.gz --backend=blas --threads=1" \
  --net "$net" --pgn ../shared/data/pgn/*.pgn --positions "$POSITIONS"

PATH=$PATH:/usr/games "$capa" match "$lc0 --weights=$work/net.pb.gz --backend=blas --threads=1" stockfish \
  --variant chess --option-b UCI_LimitStrength=true --option-b UCI_Elo=1350 --movetime 100 \
  --games "$GAMES" --pgn "$work/lc0-vs-stockfish.pgn"
