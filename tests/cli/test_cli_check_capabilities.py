"""``agent-stores check`` capabilities: ``--capability`` flags and the declarations they override."""

from __future__ import annotations

import pytest

from agent_stores.cli._check.capabilities import make_capabilities, parse_capability_flags
from agent_stores.cli._errors import CliError
from agent_stores.testing import FileStoreCapabilities, SessionStoreCapabilities


def test_a_bare_name_is_true_and_applies_to_every_suite_that_has_it() -> None:
    assert parse_capability_flags(["windowed_load"]) == {"history": {"windowed_load": True}}
    parsed = parse_capability_flags(["max_id_length=10"])
    assert parsed == {"sessions": {"max_id_length": 10}, "checkpoints": {"max_id_length": 10}}


def test_values_are_json_and_a_suite_prefix_picks_one_suite() -> None:
    parsed = parse_capability_flags(["sessions.durable=false", "checkpoints.many=7", "todos.durable"])
    assert parsed == {"sessions": {"durable": False}, "checkpoints": {"many": 7}, "todos": {"durable": True}}
    assert parse_capability_flags(["sessions.max_id_length=ten"]) == {"sessions": {"max_id_length": "ten"}}


@pytest.mark.parametrize("flag", ["flies", "history.flies", "nosuite.durable", "files.durable"])
def test_an_unknown_capability_names_the_known_ones(flag: str) -> None:
    with pytest.raises(CliError, match=r"unknown capability .*; known: .*history\.windowed_load"):
        parse_capability_flags([flag])


def test_flags_override_a_declaration_of_any_form() -> None:
    declared = FileStoreCapabilities(case_sensitive=True, empty_directories=True)
    built = make_capabilities("files", declared, {"empty_directories": False})
    assert built == FileStoreCapabilities(case_sensitive=True, empty_directories=False)
    assert make_capabilities("sessions", {"durable": True}, {"max_id_length": 5}) == SessionStoreCapabilities(
        durable=True, max_id_length=5
    )
    assert make_capabilities("sessions", None, {}) == SessionStoreCapabilities()


def test_a_wrong_declaration_is_a_usage_error() -> None:
    with pytest.raises(CliError, match="SessionStoreCapabilities has no field flies"):
        make_capabilities("sessions", {"durable": True, "flies": True}, {})
    with pytest.raises(CliError, match="must be a SessionStoreCapabilities or a dict for the sessions suite, got list"):
        make_capabilities("sessions", ["durable"], {})
    with pytest.raises(CliError, match="must be a SessionStoreCapabilities"):
        make_capabilities("sessions", FileStoreCapabilities(), {})
