"""``agent-stores demo`` on the real OpenAI client (scripted server): it recalls, and a dead server loses nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_stores.cli import app
from agents_support import FIRST, SECOND, ScriptedOpenAI, assert_turn_two_from_store


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["demo", *args])
    return result.exit_code, result.stdout, result.stderr


def test_demo_on_the_real_client_recalls_and_a_dead_server_leaves_the_session_usable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENT_STORES_OPENAI_API", raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "scripted-model")
    with ScriptedOpenAI("chat-only") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, first, err = run(url)
        assert code == 0, err
        assert f"model:  scripted-model at {server.base_url}" in first and f"user:   {FIRST}" in first
        turn_one_requests = len(server.model_requests())
        dead = server.base_url  # the server stops at the end of this block

    monkeypatch.setenv("OPENAI_BASE_URL", dead)
    code, _, err = run(url)
    assert code == 2 and "error:" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err

    with ScriptedOpenAI("chat-only") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, second, err = run(url)
        assert code == 0, err
        assert f"user:   {SECOND}" in second and "teal" in second.split("agent:", 1)[1].splitlines()[0]
        assert "history (8 messages in session 'demo')" in second  # the failed run stored nothing
        assert_turn_two_from_store(server, 0)
    assert turn_one_requests == 2
