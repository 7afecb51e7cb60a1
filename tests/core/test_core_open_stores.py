"""open_stores: URL dispatch through the agent_stores.backends entry points, the Stores object, the demo."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from agent_framework import AgentFileStore, HistoryProvider, SessionStore

from agent_stores.core import Stores, open_stores
from agent_stores.core.memory import MemoryBackend


@pytest.mark.asyncio
async def test_memory_url_gives_all_three_stores_over_shared_data() -> None:
    async with open_stores("memory://") as stores:
        history = stores.history_provider(max_messages=5)
        assert isinstance(history, HistoryProvider)
        assert history.source_id == "history"
        assert isinstance(stores.file_store(), AgentFileStore)
        assert isinstance(stores.session_store(), SessionStore)
        await stores.file_store().write("a.txt", "x")
        assert await stores.file_store().read("a.txt") == "x"
        kwargs = stores.harness_kwargs()
        assert set(kwargs) == {"history_provider", "file_memory_store", "todo_provider", "default_options"}
        assert kwargs["default_options"] == {"store": False}  # the model sees our history, not a service copy


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("redis://localhost:6379/0", 'pip install "agent-stores[redis]"'),
        ("mongodb+srv://cluster/db", 'pip install "agent-stores[mongodb]"'),
        ("nosuch://x", "no agent-stores backend for scheme 'nosuch'; installed: "),
        ("just-a-path.db", "not a store URL"),
    ],
)
def test_unknown_or_missing_backends_are_clear_errors(url: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import agent_stores.core.stores as stores_module

    real = stores_module.entry_points

    def without_ours(**kwargs: Any) -> Any:  # the workspace installs every backend; pretend redis/mongodb are absent
        return [ep for ep in real(**kwargs) if ep.name not in {"redis", "rediss", "mongodb", "mongodb+srv"}]

    monkeypatch.setattr(stores_module, "entry_points", without_ours)
    with pytest.raises(ValueError, match=expected.replace("[", r"\[").replace("]", r"\]").replace("+", r"\+")):
        open_stores(url)


def test_memory_backend_rejects_unknown_options_and_paths() -> None:
    with pytest.raises(ValueError, match="unknown memory backend options"):
        open_stores("memory://", pool_size=3)
    with pytest.raises(ValueError, match="take no host or path"):
        open_stores("memory://somewhere/else")


@pytest.mark.asyncio
async def test_repr_hides_passwords() -> None:
    async with Stores("redis://user:s3cret@host:6379/0", MemoryBackend()) as stores:
        assert "s3cret" not in repr(stores)
        assert "redis://***@host:6379/0" in repr(stores)  # the whole user part hidden


def test_unclosed_stores_warn() -> None:
    stores = open_stores("memory://")
    with pytest.warns(ResourceWarning, match="Stores was not closed"):
        del stores


@pytest.mark.asyncio
async def test_offline_demo_runs(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))
    try:
        import harness_demo
    finally:
        sys.path.pop(0)
    await harness_demo.run("memory://")
    out = capsys.readouterr().out
    assert "OFFLINE SCRIPTED MODEL" in out
    assert "preferences.md: 'Favourite colour: teal'" in out
    assert "history (4 messages" in out


def test_demo_recalls_across_processes_on_sqlite(tmp_path: Path) -> None:
    """The README's first command: run 1 stores a memory in SQLite, run 2 (a new process) recalls it."""
    import os
    import subprocess

    demo = Path(__file__).parents[2] / "examples" / "harness_demo.py"
    env = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}}
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    outputs = [
        subprocess.run(
            [sys.executable, str(demo), "--url", url], capture_output=True, text=True, env=env, timeout=120, check=True
        ).stdout
        for _ in range(2)
    ]
    assert "user:   Please remember that my favourite colour is teal." in outputs[0]
    assert "user:   What is my favourite colour?" in outputs[1]
    assert "agent:  From my memory file: Favourite colour: teal" in outputs[1]
    assert "history (8 messages in session 'demo')" in outputs[1]
