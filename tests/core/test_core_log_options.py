"""``ObjectLogDriver``'s options are read by the readers a URL uses: one rule for code and URLs."""

from __future__ import annotations

from typing import Any

import pytest

from agent_stores.core import ObjectLogDriver
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.core.objectlog import LOG_OPTIONS, log_options


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("concurrency", 0),
        ("concurrency", True),
        ("compact_after", -1),
        ("compact_after", 2.0),
        ("tail_records", False),
        ("tail_records", "0"),
        ("tail_after", -1),
        ("tail_after", True),
        ("fair_claims", "maybe"),
    ],
)
def test_the_constructor_refuses_what_the_url_refuses(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=f"option {option} takes") as built:
        ObjectLogDriver(MemoryObjectDriver(), **{option: value})
    with pytest.raises(ValueError) as read:
        LOG_OPTIONS[option](value)
    assert str(built.value) == str(read.value)


def test_the_text_of_a_url_reads_as_its_value() -> None:
    driver = ObjectLogDriver(
        MemoryObjectDriver(),
        concurrency="3",  # type: ignore[arg-type]
        compact_after="5",  # type: ignore[arg-type]
        tail_after="NONE",  # type: ignore[arg-type]
        tail_records="9",  # type: ignore[arg-type]
        fair_claims="off",  # type: ignore[arg-type]
    )
    assert (driver.concurrency, driver.compact_after, driver.tail_after, driver.tail_records) == (3, 5, None, 9)
    assert driver.fair_claims is False
    within = driver.within("tenant/")
    assert (within.concurrency, within.compact_after, within.tail_after, within.tail_records) == (3, 5, None, 9)


def test_log_options_picks_the_logs_options_from_a_backends_defaults() -> None:
    given = {"compact_after": 5, "cache_bytes": 0, "fair_claims": False, "other": 1}
    assert log_options(given) == {"compact_after": 5, "fair_claims": False}
    assert set(LOG_OPTIONS) == {"fair_claims", "concurrency", "compact_after", "tail_after", "tail_records"}
