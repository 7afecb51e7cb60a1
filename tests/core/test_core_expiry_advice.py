"""The object-store history's expiry advice is one statement, the same in every docstring and doc that gives it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent_stores.fsspec import FsspecHistoryProvider
from agent_stores.s3 import S3HistoryProvider

ROOT = Path(__file__).resolve().parents[2]

#: What every place advising on object-store history expiry says, word for word (markup aside).
CANONICAL = (
    "never expire or remove history objects by age (no bucket lifecycle rule, no clean-up job): "
    "a removed segment is a gap that makes the session unreadable, and the empty placeholders of "
    "deleted sessions are what make a stale writer conflict."
)

ADVICE = {
    "S3HistoryProvider": S3HistoryProvider.__doc__ or "",
    "FsspecHistoryProvider": FsspecHistoryProvider.__doc__ or "",
    **{
        name: (ROOT / name).read_text()
        for name in ("README.md", "docs/core.md", "docs/backends/s3.md", "docs/backends/fsspec.md")
    },
}

_NEGATION = re.compile(r"\b(never|not|no|don't|nor)\b")
_REMOVAL = re.compile(r"expir|delet|remov")


def _plain(text: str) -> str:
    """``text`` without markup, in lower case, on one line."""
    return " ".join(text.replace("`", "").lower().split())


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\n\s*[-*]\s", _plain(text)) if s]


@pytest.mark.parametrize("where", sorted(ADVICE))
def test_the_expiry_advice_is_stated_in_full(where: str) -> None:
    assert _plain(CANONICAL) in _plain(ADVICE[where]), f"{where} does not state the expiry advice"


@pytest.mark.parametrize("where", sorted(ADVICE))
def test_no_text_recommends_a_lifecycle_rule_that_removes_history(where: str) -> None:
    """A sentence about lifecycle rules that expire or remove objects says not to (or names only old versions)."""
    for sentence in _sentences(ADVICE[where]):
        if "lifecycle" in sentence and _REMOVAL.search(sentence) and "noncurrent" not in sentence:
            assert _NEGATION.search(sentence), f"{where} recommends a lifecycle rule: {sentence!r}"


def test_the_check_rejects_the_advice_that_lost_sessions() -> None:
    wrong = (
        "A bucket lifecycle rule expiring ``<prefix>history/`` objects some days after the TTL is an "
        "optional complement that reclaims storage of sessions nobody touches again."
    )
    assert any("lifecycle" in s and _REMOVAL.search(s) and not _NEGATION.search(s) for s in _sentences(wrong))
