#!/usr/bin/env bash
# The fault soak: a trainer and three self-play workers share a run, on an
# S3-compatible server (moto's, on loopback, behind a fault proxy) and then
# on a small local disk, while a seeded fault injector kills them at bad
# moments, makes the storage fail, hang or refuse connections, fills the
# disk, and starts a second trainer, or a second worker under a name in
# use, which must be refused. Every process that dies is restarted, as an
# operator would.
# At the end `capa-train check` checks the run (every game counted once,
# every file whole, a linear history, nothing half-written), and the run
# must resume and finish. The last line is `... problems N`; exit 0 only
# when N is 0.
#
#   SOAK_SECONDS=1800 scripts/soak.sh       # the length (split between the stores)
#   SOAK_SEED=7 scripts/soak.sh             # another sequence of faults
#   SOAK_STORES=local scripts/soak.sh       # one store only: s3, local
#   CAPA_BIN_DIR=target/quick-release scripts/soak.sh   # capa-train and capa-fault-proxy
#                                           # already built there (CI); default: a release build
#
# Needs moto_server (scripts/test.sh installs it, or CAPA_MOTO_SERVER), and
# root for the small disk (a tmpfs; without it the disk-full faults are
# skipped, and the log says so).
set -uo pipefail
cd "$(dirname "$0")/.."

seconds=${SOAK_SECONDS:-300}
seed=${SOAK_SEED:-1}
stores=${SOAK_STORES:-s3 local}
RANDOM=$seed

if [ -z "${CAPA_BIN_DIR:-}" ]; then
  cargo build --release --locked -p capa-train -p capa-soak >&2 || exit 1
fi
bin_dir=$(cd "${CAPA_BIN_DIR:-target/release}" && pwd) || exit 1
train=$bin_dir/capa-train
proxy_bin=$bin_dir/capa-fault-proxy
for binary in "$train" "$proxy_bin"; do
  [ -x "$binary" ] || { echo "no $binary: build it, or leave CAPA_BIN_DIR unset" >&2; exit 1; }
done
work=$PWD/target/soak
rm -rf "$work"
mkdir -p "$work"
log=$work/faults.log
problems=0

say() { echo "[soak $(date +%T)] $*" | tee -a "$log" >&2; }
problem() { problems=$((problems + 1)); say "PROBLEM: $*"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cat >"$work/run.toml" <<'EOF'
# A run small enough for an iteration every few seconds on 2 cores.
[run]
seed = 3
iterations = 0

[game]
name = "capablanca"
ply_cap = 30

[net]
channels = 16
blocks = 1
transformer_blocks = 1
heads = 2
groups = 2
policy_head = "conv"

[selfplay]
local = false
games = 12
simulations = 24
parallel_sims = 2
groups = 1
resign_loss = 0.95

[buffer]
window = 4000

[train]
batch = 16
steps = 2

[checkpoint]
every = 2
keep = 2
EOF

declare -A count
fault() { count[$1]=$(( ${count[$1]:-0} + 1 )); say "fault $1${2:+: $2}"; }

# --- one soak on one store --------------------------------------------------
soak_on() {
  local store=$1 length=$2
  local dir=$work/$store run sets=() env=() proxy_pid="" moto_pid="" disk=""
  mkdir -p "$dir"
  if [ "$store" = s3 ]; then
    local moto=${CAPA_MOTO_SERVER:-moto_server}
    command -v "$moto" >/dev/null 2>&1 || moto=${XDG_CACHE_HOME:-$HOME/.cache}/capa/moto/bin/moto_server
    if ! command -v "$moto" >/dev/null 2>&1; then
      problem "no moto_server: install it (scripts/test.sh does) or set CAPA_MOTO_SERVER"
      return
    fi
    local moto_port proxy_port
    moto_port=$(free_port)
    proxy_port=$(free_port)
    "$moto" -H 127.0.0.1 -p "$moto_port" >"$dir/moto.log" 2>&1 &
    moto_pid=$!
    for _ in $(seq 100); do
      python3 -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$moto_port/capa', method='PUT'))" \
        2>/dev/null && break
      sleep 0.2
    done
    echo pass >"$dir/proxy.mode"
    "$proxy_bin" --listen "127.0.0.1:$proxy_port" --to "127.0.0.1:$moto_port" --control "$dir/proxy.mode" \
      2>"$dir/proxy.log" &
    proxy_pid=$!
    run=s3://capa/run
    env=(AWS_ENDPOINT="http://127.0.0.1:$proxy_port" AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=test
      AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1)
  else
    run=$dir/run
    # Room for what the run writes (a network an iteration and every game,
    # at least a 4 KB page each: a 15-minute local soak filled 1.9 GB), so
    # that the disk is full only while the injector fills it. A tmpfs uses
    # only what is written.
    local size=$((64 + 6 * length))
    if [ "$(id -u)" = 0 ] && mkdir -p "$dir/disk" && mount -t tmpfs -o size=${size}m tmpfs "$dir/disk" 2>/dev/null; then
      disk=$dir/disk
      run=$disk/run
    else
      say "no tmpfs (not root?): the local soak runs without disk-full faults"
    fi
  fi
  sets=(--set "run.dir=$run")
  say "soak on $store for ${length}s: run $run"

  declare -A pids
  start() { # start NAME: the trainer or a worker, logging to its own file
    local name=$1
    if [ "$name" = trainer ]; then
      env "${env[@]}" RUST_LOG=warn "$train" --config "$work/run.toml" "${sets[@]}" >>"$dir/$name.log" 2>&1 &
    else
      env "${env[@]}" RUST_LOG=warn "$train" selfplay --worker "$name" --config "$work/run.toml" "${sets[@]}" \
        >>"$dir/$name.log" 2>&1 &
    fi
    pids[$name]=$!
  }
  local names=(trainer w1 w2 w3) restarts=0
  for name in "${names[@]}"; do start "$name"; done

  # Restarts whatever has died, as an operator would.
  tend() {
    for name in "${names[@]}"; do
      if ! kill -0 "${pids[$name]}" 2>/dev/null; then
        wait "${pids[$name]}" 2>/dev/null
        local status=$?
        say "$name exited ($status): $(tail -n 1 "$dir/$name.log" | cut -c1-200); restarting"
        restarts=$((restarts + 1))
        count[restart]=$(( ${count[restart]:-0} + 1 ))
        start "$name"
      fi
    done
  }
  kill_when() { # kill_when NAME GLOB: SIGKILL NAME once a file matching GLOB exists (10 s at most)
    local name=$1 pattern=$2
    for _ in $(seq 100); do
      if compgen -G "$pattern" >/dev/null; then
        kill -9 "${pids[$name]}" 2>/dev/null
        return 0
      fi
      sleep 0.1
    done
    return 1
  }

  local end=$((SECONDS + length))
  while [ $SECONDS -lt $end ]; do
    sleep $((2 + RANDOM % 6))
    tend
    local kinds=(kill-worker kill-trainer second-trainer second-worker)
    if [ "$store" = s3 ]; then
      kinds+=(kill-worker-uploading store-errors store-hangs store-down)
    else
      kinds+=(kill-trainer-committing)
      [ -n "$disk" ] && kinds+=(disk-full)
    fi
    local kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
    local worker=w$((1 + RANDOM % 3)) hold=$((2 + RANDOM % 7))
    case $kind in
      kill-worker)
        fault "$kind" "$worker"
        kill -9 "${pids[$worker]}" 2>/dev/null ;;
      kill-trainer)
        fault "$kind"
        kill -9 "${pids[trainer]}" 2>/dev/null ;;
      kill-worker-uploading)
        # Uploads hang at the proxy; a worker killed then dies with its PUT in flight.
        fault "$kind" "$worker"
        echo "hang 3" >"$dir/proxy.mode"; sleep 1.5
        kill -9 "${pids[$worker]}" 2>/dev/null
        sleep 2; echo pass >"$dir/proxy.mode" ;;
      second-trainer|second-worker)
        # Started by mistake on the same run (a worker: under a name in use):
        # it must be refused, naming the holder, while the first one runs
        # (after a restart, the first may not hold its lock yet: then the
        # second runs and the first is refused).
        local first=trainer args=() refusal="is held by another trainer"
        if [ "$kind" = second-worker ]; then
          first=$worker args=(selfplay --worker "$worker") refusal="worker name $worker is in use"
        fi
        fault "$kind" "$first"
        env "${env[@]}" RUST_LOG=warn timeout 30 "$train" "${args[@]}" --config "$work/run.toml" "${sets[@]}" \
          >"$dir/$kind.log" 2>&1
        local status=$?
        if grep -q "$refusal" "$dir/$kind.log"; then
          count[$kind-refused]=$(( ${count[$kind-refused]:-0} + 1 ))
        elif kill -0 "${pids[$first]}" 2>/dev/null; then
          problem "$store: a $kind ran beside the first $first (status $status): $(tail -n 1 "$dir/$kind.log")"
        else
          say "the first $first had ended: the second one ran (status $status)"
        fi ;;
      kill-trainer-committing)
        # The checkpoint's temporary file exists only while it is written.
        if kill_when trainer "$run/checkpoints/.iter-*.tmp-*"; then fault "$kind"; fi ;;
      store-errors)
        fault "$kind" "${hold}s"
        echo fail >"$dir/proxy.mode"; sleep "$hold"; echo pass >"$dir/proxy.mode" ;;
      store-hangs)
        fault "$kind" "${hold}s"
        echo "hang $hold" >"$dir/proxy.mode"; sleep "$hold"; echo pass >"$dir/proxy.mode" ;;
      store-down)
        # The server unreachable for a while, then back (moto keeps its objects
        # only in memory, so the proxy stands in for a restarted server).
        fault "$kind" "${hold}s"
        kill "$proxy_pid" 2>/dev/null; wait "$proxy_pid" 2>/dev/null; sleep "$hold"
        "$proxy_bin" --listen "127.0.0.1:$proxy_port" --to "127.0.0.1:$moto_port" --control "$dir/proxy.mode" \
          2>>"$dir/proxy.log" &
        proxy_pid=$! ;;
      disk-full)
        fault "$kind" "${hold}s"
        dd if=/dev/zero of="$disk/filler" bs=1M >/dev/null 2>&1
        sleep "$hold"; rm -f "$disk/filler" ;;
    esac
  done
  tend

  # Stop everyone cleanly, then check the run.
  for name in w1 w2 w3 trainer; do kill -TERM "${pids[$name]}" 2>/dev/null; done
  for name in "${names[@]}"; do wait "${pids[$name]}" 2>/dev/null; done
  say "$store: $restarts restarts; checking the run"
  if ! env "${env[@]}" "$train" check --config "$work/run.toml" "${sets[@]}" >"$dir/check.log" 2>&1; then
    problem "$store: capa-train check failed: $(tail -n 3 "$dir/check.log" | tr '\n' ' ')"
  fi
  cat "$dir/check.log" >&2

  # The run resumes and finishes: two more iterations with one worker.
  local done_at
  done_at=$(env "${env[@]}" "$train" check --config "$work/run.toml" "${sets[@]}" 2>/dev/null |
    sed -n 's/.*committed iterations: \([0-9]*\).*/\1/p')
  env "${env[@]}" RUST_LOG=warn "$train" selfplay --worker final --config "$work/run.toml" "${sets[@]}" \
    >>"$dir/final-worker.log" 2>&1 &
  local final_worker=$!
  if env "${env[@]}" RUST_LOG=warn timeout 600 "$train" --config "$work/run.toml" "${sets[@]}" \
    --set "run.iterations=$(( ${done_at:-0} + 2 ))" >>"$dir/final-trainer.log" 2>&1; then
    say "$store: the run resumed and finished iteration $(( ${done_at:-0} + 2 ))"
  else
    problem "$store: the resumed run did not finish: $(tail -n 1 "$dir/final-trainer.log")"
  fi
  kill -TERM "$final_worker" 2>/dev/null; wait "$final_worker" 2>/dev/null
  if ! env "${env[@]}" "$train" check --config "$work/run.toml" "${sets[@]}" >"$dir/check-final.log" 2>&1; then
    problem "$store: capa-train check after the resume failed: $(tail -n 3 "$dir/check-final.log" | tr '\n' ' ')"
  fi
  # A dead writer's temporary file is no damage (check notes it), but the
  # resumed trainer's start must have removed every one the faults left.
  if grep -q "its writer left when it died" "$dir/check-final.log"; then
    problem "$store: the resumed run kept a dead writer's temporary file: $(grep -m1 'its writer left' "$dir/check-final.log")"
  fi
  cat "$dir/check-final.log" >&2
  finals+="$store: $(tail -n 1 "$dir/check-final.log"); "

  [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
  [ -n "$moto_pid" ] && kill "$moto_pid" 2>/dev/null
  [ -n "$disk" ] && umount "$disk" 2>/dev/null
  wait 2>/dev/null
}

finals=""
store_count=$(wc -w <<<"$stores")
for store in $stores; do
  soak_on "$store" $((seconds / store_count))
done
summary=""
for kind in "${!count[@]}"; do summary+="$kind ${count[$kind]}, "; done
say "faults and restarts: ${summary%, }"
say "the runs at the end: ${finals%; }"
echo "soak: seed $seed, ${seconds}s, stores $stores: problems $problems"
[ "$problems" = 0 ]
