#!/usr/bin/env bash
# The chess CPU recipe (configs/chess-cpu.toml): Stockfish's games,
# distillation, self-play, in Lc0's network family; the final network is
# also written as Lc0's weights file. About two hours on 2 cores.
#   scripts/chess-cpu.sh            # the recipe
#   GAMES=400 scripts/chess-cpu.sh  # fewer teacher games, for a try
LC0=1 exec "$(dirname "$0")/teacher-recipe.sh" configs/chess-cpu.toml stockfish chess
