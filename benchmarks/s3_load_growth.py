"""How an S3 history load grows with the session: 100, 1,000 and 10,000 messages saved turn by turn.

Run: ``uv run benchmarks/s3_load_growth.py`` (``--sizes 100,1000`` for a shorter run).

For each size, one session is written as an agent writes it (one ``save_messages`` of 2
messages per turn, so one segment object per turn), then loaded ``--loads`` times by a
provider with ``max_messages=100`` (what an agent with a window reads on every model call)
and by one without (the whole history; the first full read compacts, later ones read the
checkpoint plus newer segments). Reported: median load latency per size and its ratio to the
smallest size. Results go to ``benchmarks/results/s3_load_growth.{md,json}``. Nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
import warnings
from pathlib import Path
from typing import Any

from agent_framework._feature_stage import ExperimentalWarning

from _payloads import make_turns

warnings.filterwarnings("ignore", category=ExperimentalWarning)

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


async def _median_load(provider: Any, session_id: str, loads: int, expected: int) -> float:
    samples: list[float] = []
    for _ in range(loads):
        start = time.perf_counter()
        got = await provider.get_messages(session_id)
        samples.append(time.perf_counter() - start)
        if len(got) != expected:
            raise RuntimeError(f"loaded {len(got)} messages, expected {expected}")
    return statistics.median(samples) * 1e3


async def run(sizes: list[int], loads: int) -> dict[str, Any]:
    import _subjects_s3 as s3
    from agent_stores.s3 import S3HistoryProvider

    client = s3._client()  # pyright: ignore[reportPrivateUsage]
    bucket = s3._bucket(client)  # pyright: ignore[reportPrivateUsage]
    client.close()
    url = s3._url(bucket)  # pyright: ignore[reportPrivateUsage]
    turns = make_turns(0, max(sizes) // 2)
    writer = S3HistoryProvider.from_url(url, session=s3._session())  # pyright: ignore[reportPrivateUsage]
    windowed = S3HistoryProvider.from_url(url, session=s3._session(), max_messages=100)  # pyright: ignore[reportPrivateUsage]
    full = S3HistoryProvider.from_url(url, session=s3._session())  # pyright: ignore[reportPrivateUsage]
    results: dict[str, Any] = {"sizes": sizes, "window_ms": {}, "full_ms": {}, "server": str(s3.s3_server()[0])}
    try:
        for size in sizes:
            session_id = f"growth-{size}"
            start = time.perf_counter()
            for turn in turns[: size // 2]:
                await writer.save_messages(session_id, turn.messages)
            print(f"{size:,} messages written in {time.perf_counter() - start:.1f} s", flush=True)
            results["window_ms"][str(size)] = await _median_load(windowed, session_id, loads, min(100, size))
            await full.get_messages(session_id)  # the first full read writes a checkpoint
            results["full_ms"][str(size)] = await _median_load(full, session_id, loads, size)
    finally:
        for provider in (writer, windowed, full):
            await provider.aclose()
    return results


def render(results: dict[str, Any]) -> str:
    sizes = [str(s) for s in results["sizes"]]
    base = sizes[0]
    lines = [
        "# S3 history: load time by session length",
        "",
        f"Server: {results['server']}. Sessions written one 2-message turn (one segment) at a time.",
        "",
        "| load | "
        + " | ".join(f"ms @{int(s):,}" for s in sizes)
        + " | "
        + " | ".join(f"{int(s):,}÷{int(base):,}" for s in sizes[1:])
        + " |",
        "|---|" + "---:|" * (2 * len(sizes) - 1),
    ]
    for label, key in (("max_messages=100", "window_ms"), ("whole history (after compaction)", "full_ms")):
        values = results[key]
        cells = [f"{values[s]:.1f}" for s in sizes] + [f"{values[s] / values[base]:.2f}x" for s in sizes[1:]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--loads", type=int, default=15)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    results = asyncio.run(run([int(s) for s in args.sizes.split(",")], args.loads))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "s3_load_growth.json").write_text(json.dumps(results, indent=2) + "\n")
    markdown = render(results)
    (args.out / "s3_load_growth.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
