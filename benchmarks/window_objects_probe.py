"""How many objects Python's collector tracks for one loaded window: ours' messages against openai-agents' items.

Run: ``uv run --group bench benchmarks/window_objects_probe.py``. The many-agents benchmark's
turns (``_payloads.make_turns``) are loaded as ours loads them (records decoded into framework
``Message`` objects) and as openai-agents' ``RedisSession`` loads them (each item ``json.loads``-ed
into dicts); after a collection (which stops tracking what it can, such as dicts of strings),
the objects reachable from the window that the collector still tracks are counted. At 1,000
agents every window is alive for about a second and so reaches the oldest generation: these are
the objects each full collection walks per window in flight. Counts, not timings.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _payloads import make_turns
from agent_stores.core.codec import decode_messages, encode_message


def tracked_from(root: Any) -> dict[str, int]:
    """The tracked objects reachable from ``root`` (``root`` itself left out), by type."""
    counts: dict[str, int] = {}
    seen: set[int] = {id(root)}
    stack: list[Any] = [r for r in gc.get_referents(root) if not isinstance(r, type)]
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if gc.is_tracked(obj):
            name = type(obj).__qualname__
            counts[name] = counts.get(name, 0) + 1
            stack.extend(r for r in gc.get_referents(obj) if not isinstance(r, type))
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--window", type=int, default=40, help="messages per window (default 40)")
    args = parser.parse_args(argv)
    turns = make_turns(0, (args.window + 1) // 2)
    messages = [m for t in turns for m in t.messages][: args.window]
    items = [i for t in turns for i in t.items][: args.window]
    ours = decode_messages([encode_message(m) for m in messages], where="probe")
    theirs = [json.loads(json.dumps(i)) for i in items]
    gc.collect()
    for name, window in (("ours (framework Message)", ours), ("openai-agents RedisSession (dict items)", theirs)):
        counts = tracked_from(window)
        total = sum(counts.values())
        kinds = ", ".join(f"{k} {v / len(window):.2f}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
        print(f"{name}: {total / len(window):.2f} tracked objects per message ({kinds})")
    content = next(c for m in ours for c in m.contents)
    print(
        f"a framework Content keeps {len(vars(content))} attributes in a dict of {sys.getsizeof(vars(content))} bytes"
    )


if __name__ == "__main__":
    main()
