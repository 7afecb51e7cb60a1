"""Store options in a URL: the history log's and a sealed store's settings, read strictly.

    python store_options.py [FOLDER]

Opens a sealed folder store whose URL tunes the history log (compaction, tails, requests in
flight) and the sealing (cached scopes, how often keys are read again), shows a keyword winning
over the URL and a history provider's own over both, and a bad value refused before anything is opened.
"""

import asyncio
import sys
from pathlib import Path

from agent_framework import Message

from agent_stores.core import open_stores
from agent_stores.core.sealing import Keyring, SealedStores


async def main(folder: Path) -> None:
    keyring = folder / "keyring.json"
    if not keyring.exists():
        Keyring.create(keyring)
    url = (
        f"file://{folder / 'store'}?keyring={keyring}"
        "&compact_after=16&tail_after=4&tail_records=200&concurrency=8"  # the history log
        "&max_scopes=256&key_refresh=30&plaintext_reads=false"  # the sealing
    )
    async with open_stores(url, key_refresh=10) as stores:  # a keyword wins over the URL
        history = stores.history_provider(compact_after=32)  # a store's own keyword wins over both
        await history.save_messages("chat", [Message("user", ["Hello"])])
        print("history:", [m.text for m in await history.get_messages("chat")])
        if isinstance(stores, SealedStores):
            print("key_refresh:", stores.encryption.key_refresh, "max_scopes:", stores.encryption.max_scopes)
    try:
        open_stores(f"file://{folder / 'other'}?compact_after=0")
    except ValueError as refused:
        print("refused:", refused)
    print("nothing opened:", not (folder / "other").exists())


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "agent-options").absolute()
    target.mkdir(exist_ok=True)
    asyncio.run(main(target))
