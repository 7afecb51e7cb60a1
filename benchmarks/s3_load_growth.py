"""How an S3 history load grows with the session: 100, 1,000 and 10,000 messages saved turn by turn.

Run: ``uv run benchmarks/s3_load_growth.py`` (``--sizes 100,1000`` for a shorter run).

For each size, one session is written as an agent writes it (one ``save_messages`` of 2
messages per turn, so one segment object per turn). Then an agent's steady state is replayed
``--loads`` times: save one more turn, then load the window (``max_messages=100``, what an agent
with a window reads before every model call) with two providers side by side, in alternating
order: one reading segments only (``tail_after=None``: the read path of logs without tail
objects, as before tails existed) and one with tail objects (the default). Last, the whole
history is loaded (the first full read compacts, later ones read the checkpoint plus newer
segments). Reported: median load latency per size, its ratio to the smallest size, and the
objects each window load fetched. Results go to ``benchmarks/results/s3_load_growth.{md,json}``.
Nothing asserts a speed. The server is local; other work may share the machine, so compare
the rows of one run, not runs.
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


class _Counting:
    """Counts the requests of one object driver (wraps its ``get`` and ``list``)."""

    def __init__(self, objects: Any) -> None:
        self.gets = self.lists = 0
        get, listing = objects.get, objects.list

        async def counted_get(key: str) -> Any:
            self.gets += 1
            return await get(key)

        async def counted_list(prefix: str, **kwargs: Any) -> Any:
            self.lists += 1
            return await listing(prefix, **kwargs)

        objects.get, objects.list = counted_get, counted_list


async def _turn_loop(
    writer: Any, readers: dict[str, Any], session_id: str, turns: list[Any], expected: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Save a turn, then time each reader's window load (order alternating); medians and requests per load."""
    samples: dict[str, list[float]] = {name: [] for name in readers}
    counters = {name: _Counting(reader.driver.objects) for name, reader in readers.items()}
    names = list(readers)
    for i, turn in enumerate(turns):
        await writer.save_messages(session_id, turn.messages)
        for name in names if i % 2 == 0 else reversed(names):
            start = time.perf_counter()
            got = await readers[name].get_messages(session_id)
            samples[name].append(time.perf_counter() - start)
            if len(got) != expected:
                raise RuntimeError(f"{name}: loaded {len(got)} messages, expected {expected}")
    medians = {name: statistics.median(values) * 1e3 for name, values in samples.items()}
    requests = {name: (c.gets + c.lists) / len(turns) for name, c in counters.items()}
    return medians, requests


async def run(sizes: list[int], loads: int) -> dict[str, Any]:
    import _subjects_s3 as s3
    from agent_stores.s3 import S3HistoryProvider

    client = s3._client()  # pyright: ignore[reportPrivateUsage]
    bucket = s3._bucket(client)  # pyright: ignore[reportPrivateUsage]
    client.close()
    url = s3._url(bucket)  # pyright: ignore[reportPrivateUsage]
    turns = make_turns(0, max(sizes) // 2 + loads)
    writer = S3HistoryProvider.from_url(url, session=s3._session())  # pyright: ignore[reportPrivateUsage]
    segments_only = S3HistoryProvider.from_url(url, session=s3._session(), max_messages=100)  # pyright: ignore[reportPrivateUsage]
    segments_only.driver.tail_after = None  # type: ignore[attr-defined]  # the read path of logs without tails
    windowed = S3HistoryProvider.from_url(url, session=s3._session(), max_messages=100)  # pyright: ignore[reportPrivateUsage]
    full = S3HistoryProvider.from_url(url, session=s3._session())  # pyright: ignore[reportPrivateUsage]
    readers = {"segments": segments_only, "tails": windowed}
    results: dict[str, Any] = {
        "sizes": sizes,
        "loads": loads,
        "segments_ms": {},
        "tails_ms": {},
        "segments_requests": {},
        "tails_requests": {},
        "full_ms": {},
        "server": str(s3.s3_server()[0]),
    }
    try:
        for size in sizes:
            session_id = f"growth-{size}"
            start = time.perf_counter()
            for turn in turns[: size // 2]:
                await writer.save_messages(session_id, turn.messages)
            print(f"{size:,} messages written in {time.perf_counter() - start:.1f} s", flush=True)
            await windowed.get_messages(session_id)  # as an agent that loaded its window before
            medians, requests = await _turn_loop(
                writer, readers, session_id, turns[size // 2 : size // 2 + loads], min(100, size + 2)
            )
            for name in readers:
                results[f"{name}_ms"][str(size)] = medians[name]
                results[f"{name}_requests"][str(size)] = requests[name]
            await full.get_messages(session_id)  # the first full read writes a checkpoint
            results["full_ms"][str(size)] = await _median_load(full, session_id, loads, size + 2 * loads)
    finally:
        for provider in (writer, segments_only, windowed, full):
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
    rows = (
        ("max_messages=100, segments only (before tails)", "segments_ms"),
        ("max_messages=100, with tail objects", "tails_ms"),
        ("whole history (after compaction)", "full_ms"),
    )
    for label, key in rows:
        values = results[key]
        cells = [f"{values[s]:.1f}" for s in sizes] + [f"{values[s] / values[base]:.2f}x" for s in sizes[1:]]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Window load, segments only ÷ with tails (same run, same turns): "
        + ", ".join(f"@{int(s):,} {results['segments_ms'][s] / results['tails_ms'][s]:.2f}x" for s in sizes)
        + ".",
        "",
        "Requests (get + list) per window load, segments only → with tails: "
        + ", ".join(
            f"@{int(s):,} {results['segments_requests'][s]:.1f} → {results['tails_requests'][s]:.1f}" for s in sizes
        )
        + ".",
        "",
        f"Each window load follows the save of one turn ({results['loads']} turns per size, medians).",
    ]
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
