"""CPU per ``encode_record`` of the benchmark's ~5 kB checkpoints (best of 3 passes over 2,000).

Run from a checkout's ``benchmarks/`` folder with that checkout's interpreter:
``../.venv/bin/python results/checkpoint-saves/encode_probe.py``.
"""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, ".")

from agent_stores.core.checkpoints import encode_record
from checkpoints_bench import make_checkpoint


def main() -> None:
    checkpoints = [make_checkpoint("wf", index, None) for index in range(2000)]
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for checkpoint in checkpoints:
            encode_record(checkpoint, allowed_types=frozenset())
        best = min(best, time.process_time() - start)
    print(f"encode_record: {best / len(checkpoints) * 1e6:.0f} us CPU per checkpoint")


if __name__ == "__main__":
    main()
