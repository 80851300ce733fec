#!/usr/bin/env bash
# The Capablanca CPU recipe (configs/capablanca-cpu.toml): Fairy-Stockfish's
# games, distillation, self-play; about 115 minutes on 2 cores.
#   scripts/capablanca-cpu.sh            # the recipe
#   GAMES=400 scripts/capablanca-cpu.sh  # fewer teacher games, for a try
exec "$(dirname "$0")/teacher-recipe.sh" configs/capablanca-cpu.toml fairy-stockfish capablanca
