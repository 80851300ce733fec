#!/usr/bin/env bash
# The scale harness: what a run costs the trainer as it grows, measured on
# moto's S3 server on loopback (and on a local folder with
# SCALE_STORES="s3 local").
#
# For each size N: a synthetic run of N games by 10 workers, 1,000 games
# an iteration (`capa-scale populate`, valid records, no search), then
# fake workers write one iteration's new games and a real trainer resumes
# and takes them: its start and that iteration's ingest are measured in
# store requests, bytes and seconds (the trainer's own counts: the "ready
# to play" line and the metrics line's `store`); `capa-train check` of the
# whole run before, and of what is new after (`--state`), at the sizes up
# to SCALE_CHECK_MAX. Then the growth between sizes.
# Last, W fake workers (SCALE_WORKERS, 100) write to one run at once for
# SCALE_SECONDS (600) while a trainer takes their games; `check` must
# report 0 problems and the trainer's ingest must keep up.
#
#   scripts/scale.sh                      # N = 10^4, 10^5, 10^6
#   SCALE_QUICK=1 scripts/scale.sh        # N = 10^3, 10^4, 60 s of 20 workers: a few minutes
#   SCALE_RATE=0.5 scripts/scale.sh       # each fake worker's games a second (0.2)
#   SCALE_SIZES="10000 100000" scripts/scale.sh
#   CAPA_BIN_DIR=target/quick-release scripts/scale.sh   # capa-train and capa-scale built there
#   SCALE_LATENCY_MS=20 scripts/scale.sh  # all but the populating through `capa-scale delay`:
#                                         # 20 ms a request, a store across a network
#
# The last line is `... problems N`; exit 0 only when N is 0.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ -n "${SCALE_QUICK:-}" ]; then
  sizes=${SCALE_SIZES:-1000 10000}
  workers=${SCALE_WORKERS:-20}
  seconds=${SCALE_SECONDS:-60}
else
  sizes=${SCALE_SIZES:-10000 100000 1000000}
  workers=${SCALE_WORKERS:-100}
  seconds=${SCALE_SECONDS:-600}
fi
check_max=${SCALE_CHECK_MAX:-100000}
stores=${SCALE_STORES:-s3}
per_iteration=1000

if [ -z "${CAPA_BIN_DIR:-}" ]; then
  cargo build --release --locked -p capa-train -p capa-soak >&2 || exit 1
fi
bin_dir=$(cd "${CAPA_BIN_DIR:-target/release}" && pwd) || exit 1
train=$bin_dir/capa-train
scale=$bin_dir/capa-scale
for binary in "$train" "$scale"; do
  [ -x "$binary" ] || { echo "no $binary: build it, or leave CAPA_BIN_DIR unset" >&2; exit 1; }
done
work=$PWD/target/scale
rm -rf "$work"
mkdir -p "$work"
problems=0
say() { echo "[scale $(date +%T)] $*" >&2; }
problem() { problems=$((problems + 1)); say "PROBLEM: $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cat >"$work/run.toml" <<'EOF'
# A run whose training costs next to nothing: what is measured is the run directory.
[run]
seed = 5
iterations = 1

[game]
name = "capablanca"
ply_cap = 40

[net]
channels = 16
blocks = 1
transformer_blocks = 1
heads = 2
groups = 2
policy_head = "conv"

[selfplay]
games = 2
simulations = 8
parallel_sims = 2
groups = 1

[buffer]
window = 20000

[train]
batch = 16
steps = 1
passes = 0.0
EOF

# The seed run: a real network and checkpoint for the synthetic runs.
say "the seed run"
if ! "$train" --config "$work/run.toml" --set "run.dir=$work/seed" >"$work/seed.log" 2>&1; then
  problem "the seed run failed: $(tail -n 3 "$work/seed.log")"
  echo "scale: problems $problems"
  exit 1
fi

moto_pid=""
delay_pid=""
stop_moto() {
  [ -n "$delay_pid" ] && kill "$delay_pid" 2>/dev/null && wait "$delay_pid" 2>/dev/null
  [ -n "$moto_pid" ] && kill "$moto_pid" 2>/dev/null && wait "$moto_pid" 2>/dev/null
  moto_pid="" delay_pid=""
}
latency=${SCALE_LATENCY_MS:-0}
trap stop_moto EXIT
# A fresh store for each measurement, so that one size's objects do not slow the next's.
start_store() { # start_store STORE NAME: sets run and env
  local store=$1 name=$2
  stop_moto
  if [ "$store" = s3 ]; then
    local moto=${CAPA_MOTO_SERVER:-moto_server} port
    command -v "$moto" >/dev/null 2>&1 || moto=${XDG_CACHE_HOME:-$HOME/.cache}/capa/moto/bin/moto_server
    command -v "$moto" >/dev/null 2>&1 || { problem "no moto_server: install it (scripts/test.sh does) or set CAPA_MOTO_SERVER"; return 1; }
    port=$(free_port)
    "$moto" -H 127.0.0.1 -p "$port" >"$work/moto-$name.log" 2>&1 &
    moto_pid=$!
    for _ in $(seq 100); do
      python3 -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$port/capa', method='PUT'))" \
        2>/dev/null && break
      sleep 0.2
    done
    run=s3://capa/$name
    populate_endpoint="http://127.0.0.1:$port"
    if [ "$latency" -gt 0 ]; then
      local delayed
      delayed=$(free_port)
      "$scale" delay --listen "127.0.0.1:$delayed" --to "127.0.0.1:$port" --ms "$latency" \
        >"$work/delay-$name.log" 2>&1 &
      delay_pid=$!
      port=$delayed
    fi
    export AWS_ENDPOINT="http://127.0.0.1:$port" AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=test \
      AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
  else
    run=$work/local-$name
    populate_endpoint=${AWS_ENDPOINT:-}
  fi
}

# `N requests, X MB read, Y MB written` -> "N X"
traffic() { sed -nE 's/.* ([0-9]+) requests, ([0-9.]+) MB read.*/\1 \2/p' | tail -n 1; }
ratio() { python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f'{b / a:.2f}x' if a > 0 else '-')" "$1" "$2"; }

rows=()
for store in $stores; do
  previous=""
  for n in $sizes; do
    iterations=$((n / per_iteration))
    name=n$n
    start_store "$store" "$name" || continue
    say "$store, $n games over $iterations iterations: populating"
    if ! AWS_ENDPOINT=$populate_endpoint "$scale" populate "$run" --from "$work/seed" --games "$n" --iterations "$iterations" --workers 10 \
      >"$work/$store-$name-populate.log" 2>&1; then
      problem "populate $n: $(tail -n 2 "$work/$store-$name-populate.log")"
      continue
    fi
    # The whole run checked, its state kept for the check of what is new.
    full="-"
    if [ "$n" -le "$check_max" ]; then
      out=$("$train" check --config "$work/run.toml" --set "run.dir=$run" --state "$work/$store-$name-check.state" \
        2>"$work/$store-$name-check-full.err")
      grep -q "problems: 0" <<<"$out" || problem "check at $n: $(grep -m 3 problem <<<"$out")"
      read -r check_requests _ < <(traffic <"$work/$store-$name-check-full.err")
      full="$(sed -nE 's/checked in ([0-9.]+) s.*/\1/p' "$work/$store-$name-check-full.err") s, $check_requests requests"
    fi
    # One iteration's new games; then the trainer resumes and takes them.
    if ! "$scale" workers "$run" --workers 10 --prefix w --rate 1000 --games $((per_iteration / 10)) \
      >"$work/$store-$name-workers.log" 2>&1; then
      problem "fake workers at $n: $(tail -n 2 "$work/$store-$name-workers.log")"
      continue
    fi
    log=$work/$store-$name-trainer.log
    if ! RUST_LOG=info "$train" --config "$work/run.toml" --set "run.dir=$run" --set selfplay.local=false \
      --set "selfplay.games=$per_iteration" --set "run.iterations=$((iterations + 1))" >"$log" 2>&1; then
      problem "the trainer at $n: $(tail -n 3 "$log")"
      continue
    fi
    read -r start_requests start_mb < <(grep "ready to play" "$log" | traffic)
    start_seconds=$(sed -nE 's/.*ready to play after ([0-9.]+) s.*/\1/p' "$log")
    # The iteration's line counts from the start on: the ingest is the difference.
    read -r line_requests line_mb < <(grep "^iteration $((iterations + 1)):" "$log" | traffic)
    ingest_seconds=$(sed -nE "s/^iteration $((iterations + 1)):.* ([0-9.]+)s self-play.*/\1/p" "$log")
    ingest_requests=$((line_requests - start_requests))
    ingest_mb=$(python3 -c "print(f'{$line_mb - $start_mb:.2f}')")
    check="-"
    if [ "$n" -le "$check_max" ]; then
      out=$("$train" check --config "$work/run.toml" --set "run.dir=$run" --state "$work/$store-$name-check.state" \
        2>"$work/$store-$name-check.err")
      grep -q "problems: 0 (what is new since" <<<"$out" || problem "check of what is new at $n: $(grep -m 3 problem <<<"$out")"
      read -r check_requests _ < <(traffic <"$work/$store-$name-check.err")
      check="$(sed -nE 's/checked in ([0-9.]+) s.*/\1/p' "$work/$store-$name-check.err") s, $check_requests requests"
    fi
    row="$store $n games: start $start_seconds s, $start_requests requests, $start_mb MB; ingest of $per_iteration games $ingest_seconds s, $ingest_requests requests, $ingest_mb MB; check: whole $full, of what is new $check"
    if [ -n "$previous" ]; then
      read -r p_n p_start_s p_start_r p_ingest_s p_ingest_r <<<"$previous"
      row="$row; growth from $p_n: start $(ratio "$p_start_s" "$start_seconds") ($(ratio "$p_start_r" "$start_requests") requests), ingest $(ratio "$p_ingest_s" "$ingest_seconds") ($(ratio "$p_ingest_r" "$ingest_requests") requests)"
    fi
    previous="$n $start_seconds $start_requests $ingest_seconds $ingest_requests"
    say "$row"
    rows+=("$row")
  done
done

# Many workers at once on one run, with the trainer taking their games.
for store in $stores; do
  start_store "$store" "workers" || continue
  say "$store: $workers fake workers for ${seconds}s with a trainer"
  AWS_ENDPOINT=$populate_endpoint "$scale" populate "$run" --from "$work/seed" --games $((10 * per_iteration)) --iterations 10 --workers 10 \
    >"$work/$store-workers-populate.log" 2>&1 || { problem "populate for the workers"; continue; }
  # An iteration every 15 s of the workers' games.
  rate=${SCALE_RATE:-0.2}
  batch=$(python3 -c "print(max(1, round($workers * $rate * 15)))")
  log=$work/$store-workers-trainer.log
  RUST_LOG=info "$train" --config "$work/run.toml" --set "run.dir=$run" --set selfplay.local=false \
    --set "selfplay.games=$batch" --set run.iterations=100000 >"$log" 2>&1 &
  trainer=$!
  "$scale" workers "$run" --workers "$workers" --rate "$rate" --seconds "$seconds" >"$work/$store-workers.log" 2>&1 \
    || problem "the fake workers: $(tail -n 2 "$work/$store-workers.log")"
  # The trainer takes what is left, a whole iteration at a time; then it stops.
  sleep 20
  kill -INT "$trainer" 2>/dev/null
  wait "$trainer"
  written=$(sed -nE 's/.* wrote ([0-9]+) games.*/\1/p' "$work/$store-workers.log")
  out=$("$train" check --config "$work/run.toml" --set "run.dir=$run" 2>/dev/null)
  grep -q "problems: 0" <<<"$out" || problem "check after the workers: $(grep -m 3 problem <<<"$out")"
  read -r trained pending < <(sed -nE 's/.*\(([0-9]+) trained on, ([0-9]+) not yet\).*/\1 \2/p' <<<"$out")
  row="$store: $workers workers wrote ${written:-0} games in ${seconds}s; the trainer took $(( ${trained:-0} - 10 * per_iteration )) in $(grep -c '^iteration' "$log") iterations, ${pending:-?} wait (an iteration takes $batch)"
  [ "${pending:-$batch}" -lt "$batch" ] || problem "the trainer did not keep up: ${pending:-?} games wait"
  say "$row"
  rows+=("$row")
done
stop_moto

for row in "${rows[@]}"; do echo "$row"; done
echo "scale: problems $problems"
[ "$problems" -eq 0 ]
