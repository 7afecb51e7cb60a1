"""The URL clauses themselves: a correct backend passes them, each deliberately broken one fails its clause.

The backends are ``url_backend``'s ``urltest://`` variants over the core's in-process stores:
no server, so ``agent-stores check`` reaches each error path in a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

import url_backend
from agent_stores.testing.urls import SECRET, VALUE, StoreURLCapabilities, StoreURLConformance, run_check_command

pytest_plugins = ["pytester"]

EVERY_PATH = StoreURLCapabilities(unreachable=True, refused=True, malformed=True, wrong_tls=True, boolean_options=True)


def templates(scheme: str) -> dict[str, list[str]]:
    return {
        "unreachable": [f"{scheme}://agent:{SECRET}@unreachable:1/"],
        "refused": [f"{scheme}://agent:{SECRET}@refusing:1/"],
        "malformed": [f"{scheme}://agent:{SECRET}@works:port/", f"{scheme}://agent:{SECRET}@works:1/?colour=blue"],
        "wrong_tls": [f"{scheme}://agent:{SECRET}@badtls:1/?verify=on"],
    }


class TestCorrectURLs(StoreURLConformance):
    """The correct ``urltest://`` backend: every clause passes."""

    capabilities = EVERY_PATH

    @pytest.fixture(autouse=True)
    def _registered(self, monkeypatch: pytest.MonkeyPatch) -> None:
        url_backend.register(monkeypatch)

    @pytest.fixture
    def store_urls(self) -> Mapping[str, Sequence[str]]:
        return templates("urltest")

    @pytest.fixture
    def boolean_url_options(self) -> Mapping[str, str]:
        return {"verify": f"urltest://works:1/?verify={VALUE}"}


def test_run_check_command_reports_a_url_that_reaches_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    url_backend.register(monkeypatch)
    code, shown = run_check_command("urltest://agent:pw@works:1/")
    assert code == 2 and "the store answered" in shown


_BROKEN = """
import pytest
import url_backend
from agent_stores.testing.urls import SECRET, VALUE, StoreURLCapabilities, StoreURLConformance
from test_suites_urls import EVERY_PATH, templates
"""

_CLASS = """

class Test{name}(StoreURLConformance):
    capabilities = EVERY_PATH

    @pytest.fixture(autouse=True)
    def _registered(self, monkeypatch):
        url_backend.register(monkeypatch)
        if {redaction_broken}:
            url_backend.break_redaction(monkeypatch)

    @pytest.fixture
    def store_urls(self):
        return templates({scheme!r})

    @pytest.fixture
    def boolean_url_options(self):
        return {{"verify": {scheme!r} + "://works:1/?verify=" + VALUE}}
"""

#: Each broken backend (class name, scheme, redaction broken), the clauses it must fail, and a phrase of the failure.
_CASES: dict[tuple[str, str, bool], tuple[list[str], str]] = {
    ("RedactionStopsAtTheFirstAt", "urltest", True): (
        [
            "test_check_of_an_unreachable_store_never_shows_its_password",
            "test_check_of_refused_credentials_never_shows_the_password",
            "test_check_of_a_failed_tls_handshake_never_shows_the_password",
        ],
        "cannot reach urltest://***@",  # the leak: the password after the first '@' shown
    ),
    ("ParserQuotesTheNode", "urltest+echonode", False): (
        ["test_check_of_a_malformed_url_never_shows_its_password"],
        "invalid port in urltest URL node 'agent:",  # the leak: the node quoted with its user part
    ),
    ("DriverQuotesTheURL", "urltest+echourl", False): (
        [
            "test_check_of_an_unreachable_store_never_shows_its_password",
            "test_check_of_refused_credentials_never_shows_the_password",
            "test_check_of_a_failed_tls_handshake_never_shows_the_password",
        ],
        "showed the password",
    ),
    ("LenientBooleans", "urltest+lenient", False): (
        ["test_boolean_url_options_take_only_known_spellings"],
        "verify='required' was accepted",
    ),
}


def test_broken_backends_fail_the_url_clauses_written_for_their_bugs(pytester: pytest.Pytester) -> None:
    pytester.syspathinsert(Path(__file__).parent)
    pytester.makepyfile(
        test_broken_urls=_BROKEN
        + "".join(_CLASS.format(name=name, scheme=scheme, redaction_broken=broken) for name, scheme, broken in _CASES)
    )
    nodes = [
        f"test_broken_urls.py::Test{name}::{clause}"
        for (name, _, _), (clauses, _) in _CASES.items()
        for clause in clauses
    ]
    recorder = pytester.inline_run(*nodes, "-p", "no:cacheprovider")
    reports = {
        "::".join(r.nodeid.split("::")[-2:]): r
        for r in recorder.getreports("pytest_runtest_logreport")
        if r.when == "call"
    }
    for (name, _, _), (clauses, phrase) in _CASES.items():
        for clause in clauses:
            report = reports.get(f"Test{name}::{clause}")
            assert report is not None, f"Test{name}::{clause} did not run"
            assert report.failed, f"the broken backend {name} passed {clause}"
            assert phrase in report.longreprtext, f"{name} / {clause}: {report.longreprtext[-1500:]}"
