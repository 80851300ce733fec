#!/usr/bin/env bash
# Self-play on top of a teacher (configs/capablanca-selfplay.toml): from the
# shipped network, the network's own games only, with the ladder Elo and a
# 40-game match against Fairy-Stockfish UCI_Elo 1350 at 200 ms a move every
# hour of work in the run's metrics.jsonl. Stopped at any point (Ctrl-C,
# kill, a reboot), the same command resumes where it stopped; it runs until
# stopped. Extra arguments go to capa-train (`--set KEY=VALUE`).
#
#   scripts/capablanca-selfplay.sh
#   capa plot runs/capablanca-selfplay        # the curves, as it goes
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bin capa --bin capa-train
# Fairy-Stockfish from Debian's package lives in /usr/games.
PATH=$PATH:/usr/games exec target/release/capa-train --config configs/capablanca-selfplay.toml "$@"
