# Shared by the perft benchmarks: CPU-time measurement and medians.
# Sourced, not run.
#
# A tool is a shell function `tool FEN DEPTH` that prints its leaf count as
# `nodes N` or `Nodes searched: N`. Each run times every tool once, one after
# the other, so that all of them meet the same background load (these
# machines are shared); the figure per tool is the median over $RUNS runs of
# leaves per CPU-second (user + sys), after subtracting the tool's start-up
# (the median CPU time of a depth-1 run). STAT=min takes each tool's fastest
# run instead: background load only ever adds time, so on a busy machine the
# minimum is the steadier estimate of what the code itself costs.

RUNS=${RUNS:-5}
STAT=${STAT:-median}
case "$STAT" in median | min) ;; *) echo "STAT must be median or min, not '$STAT'" >&2; exit 2 ;; esac

# cpu_seconds OUT CMD...: runs CMD (stdout to OUT), prints its user+sys seconds.
cpu_seconds() {
  local out=$1; shift
  local TIMEFORMAT='%3U %3S' t
  t=$( { time "$@" >"$out" 2>/dev/null; } 2>&1 )
  awk '{ printf "%.3f\n", $1 + $2 }' <<<"$t"
}

median() {
  sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'
}

# median_fields: lines `name value name value ...` on stdin; prints each
# name with the median of its values, on one line.
median_fields() {
  local lines name
  lines=$(cat)
  for name in $(head -n 1 <<<"$lines" | awk '{ for (i = 1; i < NF; i += 2) print $i }'); do
    printf '%s %s ' "$name" "$(awk -v n="$name" '{ for (i = 1; i < NF; i += 2) if ($i == n) print $(i + 1) }' <<<"$lines" | median)"
  done
  echo
}

# The statistic the figures use over runs: $STAT.
summary() {
  if [ "$STAT" = min ]; then sort -g | head -n 1; else median; fi
}

# uci_perft ENGINE VARIANT FEN DEPTH: one engine run of `go perft`. The engine
# finishes the perft before it honours `quit`.
uci_perft() {
  local engine=$1 variant=$2 fen=$3 depth=$4
  {
    echo uci
    [ -n "$variant" ] && echo "setoption name UCI_Variant value $variant"
    echo "position fen $fen"
    echo "go perft $depth"
    echo quit
  } | "$engine"
}

# measure FEN DEPTH EXPECTED TOOL...: prints one figure per tool, in order:
# millions of leaves per CPU-second. Fails if a tool miscounts.
measure() {
  local fen=$1 depth=$2 expected=$3; shift 3
  local tmp; tmp=$(mktemp -d)
  local tool run
  for tool in "$@"; do
    for run in $(seq "$RUNS"); do cpu_seconds "$tmp/out" "$tool" "$fen" 1; done | median >"$tmp/$tool.base"
  done
  for run in $(seq "$RUNS"); do
    for tool in "$@"; do
      cpu_seconds "$tmp/out" "$tool" "$fen" "$depth" >>"$tmp/$tool.secs"
      local nodes
      nodes=$(grep -Eo '(nodes|Nodes searched:) [0-9]+' "$tmp/out" | grep -Eo '[0-9]+' | tail -n 1)
      if [ "$nodes" != "$expected" ]; then
        echo "$tool counted '$nodes' leaves at depth $depth of $fen, expected $expected" >&2
        rm -rf "$tmp"
        return 1
      fi
    done
  done
  local figures=()
  for tool in "$@"; do
    figures+=("$(summary <"$tmp/$tool.secs" | awk -v n="$expected" -v b="$(cat "$tmp/$tool.base")" \
      '{ c = $1 - b; if (c <= 0) c = $1; printf "%.1f", n / c / 1e6 }')")
  done
  rm -rf "$tmp"
  echo "${figures[@]}"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# geomean RATIO...: the geometric mean of the ratios.
geomean() { printf '%s\n' "$@" | awk '{ s += log($1) } END { printf "%.2f", exp(s / NR) }'; }

find_engine() {
  command -v "$1" 2>/dev/null || { [ -x "/usr/games/$1" ] && echo "/usr/games/$1"; } || {
    echo "$1 not found: apt-get update && apt-get install -y $1" >&2
    exit 1
  }
}

# lc0_binary: prints the path of lc0 built from source with its CPU backend
# (BLAS over OpenBLAS, and Eigen) in target/lc0/, building it the first time.
# The sources come from LC0_SRC (a checkout of github.com/LeelaChessZero/lc0)
# or are cloned from GitHub once; nothing is fetched after that. Needs meson
# and ninja (`pip install meson ninja`) and Debian's libopenblas-dev,
# libeigen3-dev, libabsl-dev and zlib1g-dev.
lc0_binary() {
  local work=target/lc0
  if [ ! -x "$work/lc0" ]; then
    mkdir -p "$work"
    local src=${LC0_SRC:-$work/src}
    [ -d "$src" ] || git clone --depth 1 https://github.com/LeelaChessZero/lc0 "$src" >&2
    rm -rf "$work/build"
    meson setup "$work/build" "$src" --buildtype=release -Dgtest=false -Dblas=true -Dopenblas=true \
      -Donnx=false -Dplain_cuda=false -Dcudnn=false -Dnative_arch=false >&2
    ninja -C "$work/build" lc0 >&2
    cp "$work/build/lc0" "$work/lc0"
  fi
  echo "$work/lc0"
}

# capa_bin_dir: prints the folder of capa and capa-train: CAPA_BIN_DIR when
# set (binaries already built), else target/release after a release build.
capa_bin_dir() {
  if [ -n "${CAPA_BIN_DIR:-}" ]; then
    echo "$CAPA_BIN_DIR"
  else
    cargo build --release --locked -p capa-cli -p capa-train >&2
    echo target/release
  fi
}
