"""A harness agent that remembers across runs, with every byte in one SQLite file (what ``agent-stores demo`` runs).

    uv run examples/harness_demo.py                 # first run stores a memory, second run recalls it
    uv run examples/harness_demo.py --reset         # start over

With ``OPENAI_API_KEY`` set (or ``OPENAI_BASE_URL`` pointing at an OpenAI-compatible server, no key
needed) and ``agent-framework-openai`` installed, the real model answers through
``agent_stores.core.openai_client()``; otherwise a clearly labelled offline scripted model plays
the part, calling the same memory tools a real model would. The demo itself is
``agent_stores.cli.demo``; for the wiring in a program of your own see ``harness_agent.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from agent_stores.cli.demo import DEFAULT_URL, reset, run

__all__ = ["main", "run"]


def main() -> None:
    """Parse the command line and run the demo."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=DEFAULT_URL, help="store URL (default: %(default)s)")
    parser.add_argument("--reset", action="store_true", help="forget the demo's session first")
    parser.add_argument("--offline", action="store_true", help="use the scripted model even when OPENAI_* is set")
    args = parser.parse_args()
    if args.reset:
        asyncio.run(reset(args.url))
    try:
        asyncio.run(run(args.url, offline=args.offline))
    except Exception as err:  # a wrong key or an unreachable server: one line; the stored session is untouched
        sys.exit(f"error: {type(err).__name__}: {err}")


if __name__ == "__main__":
    main()
