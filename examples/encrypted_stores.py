"""Encryption at rest: every store sealed per tenant by a keyring, and a tenant erased.

    python encrypted_stores.py

Makes ``keyring.json`` (mode 0600) on the first run, writes a tenant's history and a memory
file through sealed stores, shows that the database file holds none of it in the clear and
that an open without the key is refused, and erases the tenant with ``forget``.
"""

import asyncio
from pathlib import Path

from agent_framework import Message

from agent_stores.core import SealedStoreError, open_stores
from agent_stores.core.sealing import Keyring


def load_keyring(path: Path = Path("keyring.json")) -> Keyring:
    """The keyring file, made (mode 0600) on the first run."""
    return Keyring.load(path) if path.exists() else Keyring.create(path)


def in_database_files(text: bytes) -> bool:
    """Whether ``text`` occurs in the raw database files (the database and its write-ahead log)."""
    return any(text in path.read_bytes() for path in Path().glob("sealed.db*"))


async def main(keyring: Keyring) -> None:
    async with open_stores("sqlite:///sealed.db", encryption=keyring) as stores:
        alice = stores.tenant("alice")
        history = alice.history_provider()
        await history.save_messages("chat-1", [Message("user", ["My favourite colour is teal."])])
        await alice.file_store().write("memories/colour.md", "Alice likes teal.")
        print("alice reads:", [m.text for m in await history.get_messages("chat-1")])

        print("'teal' in the database files:", in_database_files(b"teal"))

        async with open_stores("sqlite:///sealed.db", encryption=False) as without_key:
            try:
                await without_key.tenant("alice").file_store().read("memories/colour.md")
            except SealedStoreError as refused:
                print("opened without the key:", type(refused).__name__)

        print("forget alice:", await stores.forget("alice"), "items deleted")
        print("alice after forget:", await history.get_messages("chat-1"))


if __name__ == "__main__":
    asyncio.run(main(load_keyring()))
