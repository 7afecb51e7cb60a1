"""What an agent is given: ``create_harness_agent`` keyword arguments for stores, and an OpenAI client."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, Literal

from agent_framework import AgentFileStore, CompactionStrategy, HistoryProvider, TodoProvider, TodoStore

__all__ = ["OPENAI_API_ENV", "harness_kwargs", "openai_client"]

#: Environment variable choosing the OpenAI API :func:`openai_client` speaks: ``chat`` or ``responses``.
OPENAI_API_ENV = "AGENT_STORES_OPENAI_API"

# Sent as the key to an OpenAI-compatible server reached through OPENAI_BASE_URL without one
# (a local server that checks no key); the OpenAI SDK refuses to build a client without a key.
_NO_KEY = "no-key"
_DEFAULT_MODEL = "gpt-4o-mini"


def harness_kwargs(
    history: HistoryProvider,
    files: AgentFileStore,
    *,
    todos: TodoStore | None = None,
    file_access: bool = False,
    service_history: bool = False,
    default_options: Mapping[str, Any] | None = None,
    compaction: CompactionStrategy | None = None,
    retain: bool = False,
) -> dict[str, Any]:
    """Return ``create_harness_agent`` keyword arguments for ``history`` and ``files``.

    See :meth:`~agent_stores.core.Stores.harness_kwargs`; this builds them for stores you made
    yourself. With ``todos``, the harness keeps its todo list there (``todo_provider``).
    With ``compaction`` (a framework strategy), the harness compacts with it before every
    model call (``before_compaction_strategy``) and a
    :class:`~agent_stores.core.compaction.StoreCompactionProvider` stores what it decides after
    every turn (``context_providers``), so the next turn loads the compacted view; with
    ``retain=True`` it then drops the excluded messages from the store (``LogHistoryProvider.retain``).

    Raises:
        ValueError: ``default_options`` sets ``store`` to something else than ``service_history`` implies,
            or ``retain`` is set without ``compaction``.
        TypeError: ``compaction`` is given and ``history`` is not one of our history providers.
    """
    options = dict(default_options or {})
    if not service_history:
        if options.get("store") not in (None, False):
            raise ValueError("default_options['store'] must be False unless service_history=True")
        options["store"] = False
    kwargs: dict[str, Any] = {"history_provider": history, "file_memory_store": files, "default_options": options}
    if file_access:
        kwargs["file_access_store"] = files
    if todos is not None:
        kwargs["todo_provider"] = TodoProvider(store=todos)
    if compaction is not None:
        from .compaction import StoreCompactionProvider
        from .history import LogHistoryProvider

        if not isinstance(history, LogHistoryProvider):
            raise TypeError(f"compaction is stored by agent-stores history providers, not {type(history).__name__}")
        kwargs["before_compaction_strategy"] = compaction
        kwargs["context_providers"] = [StoreCompactionProvider(history, after_strategy=compaction, retain=retain)]
    elif retain:
        raise ValueError("retain=True drops what a compaction excluded: give the compaction strategy too")
    return kwargs


def openai_client(
    api: Literal["chat", "responses"] | None = None,
    *,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    **options: Any,
) -> Any:
    """Return the framework's OpenAI chat client for OpenAI or any OpenAI-compatible server.

    ``api`` chooses the API: ``"chat"`` (Chat Completions, the default: every OpenAI-compatible
    server speaks it) or ``"responses"`` (the Responses API); when not given, the
    ``AGENT_STORES_OPENAI_API`` environment variable decides, else ``"chat"``. Both keep the
    conversation in the history provider when the agent is built with
    :meth:`~agent_stores.core.Stores.harness_kwargs` (``store=False``).

    ``model``, ``api_key`` and ``base_url`` default to ``OPENAI_MODEL`` (else ``gpt-4o-mini``),
    ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``. A base URL without a key (a local server
    that checks none) works: a placeholder key is sent. ``options`` go to the client class
    (``OpenAIChatCompletionClient`` or ``OpenAIChatClient`` of ``agent-framework-openai``).

    Raises:
        ImportError: ``agent-framework-openai`` is not installed (``pip install "agent-stores[openai]"``).
        ValueError: ``api`` is not ``chat`` or ``responses``, or neither a key nor a base URL is configured.
    """
    chosen = api or os.environ.get(OPENAI_API_ENV, "").strip().lower() or "chat"
    if chosen not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses' (from {OPENAI_API_ENV} or the argument), got {chosen!r}")
    try:
        from agent_framework.openai import OpenAIChatClient, OpenAIChatCompletionClient
    except ImportError as err:
        raise ImportError('the OpenAI clients need agent-framework-openai: pip install "agent-stores[openai]"') from err
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    if key is None and url is None:
        raise ValueError("set OPENAI_API_KEY (api.openai.com) or OPENAI_BASE_URL (an OpenAI-compatible server)")
    name = model or os.environ.get("OPENAI_MODEL") or _DEFAULT_MODEL
    client_type = OpenAIChatClient if chosen == "responses" else OpenAIChatCompletionClient
    return client_type(model=name, api_key=key or _NO_KEY, base_url=url, **options)
