"""The fsspec backend on a local folder: files at their real paths, readable by the framework's own store.

Run with ``uv run examples/fsspec_folder.py [FOLDER]`` (default: a new temporary folder). The
same code runs on any fsspec filesystem: ``fsspec+sftp://user@host/srv/agent``,
``fsspec+s3://bucket/agent?endpoint_url=...``, ``fsspec+memory://agent``.
"""

import asyncio
import sys
import tempfile
from pathlib import Path

from agent_framework import AgentSession, FileSystemAgentFileStore, Message

from agent_stores.core import open_stores


async def main(folder: Path) -> None:
    async with open_stores(f"file://{folder}") as stores:
        history, files, sessions = stores.history_provider(), stores.file_store(), stores.session_store()
        await history.save_messages("demo", [Message("user", ["My name is Ada."])])
        await files.write("memories/user.md", "Name: Ada\n")
        await sessions.set("demo", AgentSession(session_id="demo"))
        print("history:", [m.text for m in await history.get_messages("demo")])

    # The harness files are plain files under <folder>/files: any tool, and the framework's own
    # FileSystemAgentFileStore, reads them where they are.
    framework_store = FileSystemAgentFileStore(folder / "files")
    print("framework reads:", repr(await framework_store.read("memories/user.md")))


def on_disk(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.md"))


if __name__ == "__main__":
    target = Path(sys.argv[1]).absolute() if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="agent-stores-"))
    asyncio.run(main(target))
    print("on disk:", on_disk(target))
