#!/usr/bin/env python3
"""The peer of `capa bench v6`: lczero-training's chunk parser on the same V6 files.

    LCZERO_TRAINING=/path/to/lczero-training PYTHON=/path/to/venv/bin/python \
        benches/v6_read.sh          # runs this after capa's figures, and prints the ratio

or alone: `python benches/v6_vs_chunkparser.py DATA_DIR [POSITIONS]`. It needs numpy
and a checkout of lczero-training (its tf/chunkparser.py and tf/shufflebuffer.py).
The parser runs as lczero-training runs it: 2 worker processes (this machine's
cores), a shuffle buffer of 100,000 positions, batches of 256, every record kept;
its batches hold the 112 planes unpacked to floats, so the figure to set it
against is capa's `inputs_r2`. Timed once the shuffle buffer is full (the first
batch comes then). Prints `chunkparser_w2 P` in positions per second.
"""
import glob
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ["LCZERO_TRAINING"], "tf"))
import chunkparser  # noqa: E402


def main():
    data = sys.argv[1]
    positions = int(sys.argv[2]) if len(sys.argv) > 2 else 300_000
    files = sorted(glob.glob(os.path.join(data, "**", "*.gz"), recursive=True))
    if not files:
        sys.exit(f"no .gz files under {data}")
    parser = chunkparser.ChunkParser(files, 1, shuffle_size=100_000, sample=1, batch_size=256, workers=2)
    batches = parser.parse()
    next(batches)
    started = time.time()
    taken = 0
    while taken < positions:
        planes = next(batches)[0]
        taken += len(planes) // (112 * 64 * 4)
    wall = time.time() - started
    print(f"chunkparser, 2 workers: {taken / wall:.0f} positions/s")
    print(f"chunkparser_w2 {taken / wall:.0f}")
    parser.shutdown()


if __name__ == "__main__":
    main()
