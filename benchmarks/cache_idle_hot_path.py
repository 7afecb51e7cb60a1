"""What idle expiry costs the decode cache's hot path: all-hit loads with and without ``max_idle``, in one process.

Run: ``uv run --group bench benchmarks/cache_idle_hot_path.py``. Rounds of ``--loads`` loads
of the same ``--window`` records, every one served from the cache, alternating a
``DecodeCache(max_idle=None)`` and a ``DecodeCache()`` (the default ``cache_idle``) round by
round, ``--rounds`` rounds for each of ``share`` (a history provider's loads) and ``decode``;
prints the fastest round of each and the median of the ratios paired within each round.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence

from agent_framework import Message

from agent_stores.core import codec


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--window", type=int, default=40, help="records per load (default 40)")
    parser.add_argument("--loads", type=int, default=200, help="loads per round (default 200)")
    parser.add_argument("--rounds", type=int, default=400, help="rounds per operation (default 400)")
    args = parser.parse_args(argv)
    records = [
        codec.encode_message(
            Message(role="user" if i % 2 else "assistant", contents=[f"message {i} " + "x" * 200], message_id=f"m{i}")
        )
        for i in range(args.window)
    ]
    without, default = codec.DecodeCache(64 << 20, max_idle=None), codec.DecodeCache(64 << 20)

    def timed(cache: codec.DecodeCache, operation: str) -> float:
        start = time.perf_counter()
        for _ in range(args.loads):
            if operation == "share":
                cache.share(records, "probe", "log")
            else:
                cache.decode(records, "probe")
        return (time.perf_counter() - start) / args.loads * 1e6

    for operation in ("share", "decode"):
        timed(without, operation)  # fill both caches
        timed(default, operation)
        ratios: list[float] = []
        fastest = [float("inf"), float("inf")]
        for index in range(args.rounds):
            order = (without, default) if index % 2 else (default, without)
            took = {id(cache): timed(cache, operation) for cache in order}
            off, on = took[id(without)], took[id(default)]
            ratios.append(on / off)
            fastest = [min(fastest[0], off), min(fastest[1], on)]
        print(
            f"{operation} ({args.window} hits): max_idle=None fastest {fastest[0]:.2f} us, "
            f"max_idle={default.max_idle:g} fastest {fastest[1]:.2f} us; "
            f"paired ratio median {statistics.median(ratios):.3f}, fastest to fastest {fastest[1] / fastest[0]:.3f}"
        )


if __name__ == "__main__":
    main()
