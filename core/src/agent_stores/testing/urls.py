"""URL clauses: ``agent-stores check`` never shows a URL's secret, and boolean URL options are strict.

Subclass :class:`StoreURLConformance`, declare which error paths your URLs can reach in
:class:`StoreURLCapabilities`, and provide ``store_urls``: a fixture mapping each declared path
to URL templates in which :data:`SECRET` stands where a secret goes (the password, a secret
query option), and, with ``boolean_options``, ``boolean_url_options``: option name to a URL
template in which :data:`VALUE` stands for the option's value::

    class TestRedisURLs(StoreURLConformance):
        capabilities = StoreURLCapabilities(unreachable=True, refused=True, malformed=True, wrong_tls=True)

        @pytest.fixture
        def store_urls(self, redis_single):
            port = redis_single.port
            return {
                "unreachable": [f"redis://agent:{SECRET}@127.0.0.1:1/0"],
                "refused": [f"redis://agent:{SECRET}@127.0.0.1:{port}/0"],
                "malformed": [f"redis://agent:{SECRET}@127.0.0.1:{port}/zero"],
                "wrong_tls": [f"rediss://agent:{SECRET}@127.0.0.1:{port}/0"],
            }

        @pytest.fixture
        def boolean_url_options(self):
            return {"ssl_check_hostname": f"rediss://127.0.0.1:1/0?ssl_check_hostname={VALUE}"}

Each secret clause runs ``agent-stores check <url> --suite sessions --json --verbose`` in this
process for passwords holding ``# ? / @ : %`` (one each, all together, a broken ``%`` escape),
written raw and percent-encoded, and asserts that the command stopped on an error (exit 2)
and that no piece of the password appears in its stdout, stderr (the traceback included), an
escaping exception, a warning, or a log record (``agent_stores`` loggers at DEBUG, the rest at
WARNING). A URL that reaches the store fails the clause before any suite runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import secrets
import traceback
import warnings
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal
from urllib.parse import quote

import pytest

from agent_stores.core import open_stores

from ._base import ConformanceBase, requires

__all__ = [
    "BAD_BOOLEANS",
    "GOOD_BOOLEANS",
    "SECRET",
    "VALUE",
    "ErrorPath",
    "StoreURLCapabilities",
    "StoreURLConformance",
    "hostile_passwords",
    "run_check_command",
]

#: Stands for the secret in a ``store_urls`` template.
SECRET: Final = "<SECRET>"
#: Stands for the option's value in a ``boolean_url_options`` template.
VALUE: Final = "<VALUE>"

#: The error paths of ``agent-stores check`` a secret clause covers.
ErrorPath = Literal["unreachable", "refused", "malformed", "wrong_tls"]

#: Spellings every boolean URL option takes (any case).
GOOD_BOOLEANS: Final = ("1", "true", "yes", "on", "TRUE", "Yes", "On", "0", "false", "no", "off", "FALSE", "No", "Off")
#: Spellings no boolean URL option may take (an unknown spelling must never read as false).
BAD_BOOLEANS: Final = ("required", "enabled", "disabled", "t", "f", "y", "n", "", "2", "-1", "truee", "%20true")

_SPECIALS: Final = "#?/@:%"
# Letters that never occur in hex, so no id, digest or uuid in the output matches a piece.
_PIECE_LETTERS: Final = "ghjkmnpqrstvwxyzGHJKMNPQRSTVWXYZ"
# Exit code of ``agent-stores`` for bad input or an unreachable store.
_EXIT_USAGE: Final = 2


def _piece() -> str:
    return "Sx" + "".join(secrets.choice(_PIECE_LETTERS) for _ in range(8))


def hostile_passwords() -> list[tuple[str, list[str]]]:
    """Passwords holding ``# ? / @ : %`` (one each, all together, a broken escape), each with its pieces.

    Each password is made of random pieces around the characters; a clause looks for every
    piece, so a password shown in part (``Redis at :piece1:6379``) is caught too.
    """
    made: list[tuple[str, list[str]]] = []
    for special in [*_SPECIALS, "%zz"]:
        pieces = [_piece(), _piece()]
        made.append((special.join(pieces), pieces))
    pieces = [_piece() for _ in range(len(_SPECIALS) + 1)]
    made.append(("".join(p + s for p, s in zip(pieces, _SPECIALS, strict=False)) + pieces[-1], pieces))
    return made


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(logging.Formatter().format(record))
        except Exception as err:  # a record that cannot be formatted still counts
            self.lines.append(f"{record.msg!r} {record.args!r} ({err})")


class _ReachedTheStore(Exception):
    """``check`` got past its error paths: the URL was not one."""


def _refuse_to_run(*args: Any, **kwargs: Any) -> int:
    raise _ReachedTheStore("the store answered: the URL reached no error path of `agent-stores check`")


@contextlib.contextmanager
def _recording_logs() -> Generator[_Records]:
    handler = _Records()
    ours = logging.getLogger("agent_stores")
    level = ours.level
    root = logging.getLogger()
    root.addHandler(handler)
    ours.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        ours.setLevel(level)
        root.removeHandler(handler)


def run_check_command(url: str) -> tuple[int, str]:
    """Run ``agent-stores check <url> --suite sessions --json --verbose`` here; return its exit code and all it showed.

    What it showed: stdout, stderr, an exception that escaped the command (with its
    traceback), the warnings it raised and the log records it made. The suites themselves never
    run: a URL that reaches the store ends the command with an error saying so (a secret
    clause expects an error path). Blocking (the command runs its own event loop): call it
    from a thread when a loop is running.
    """
    from typer.testing import CliRunner

    check_module: Any = importlib.import_module("agent_stores.cli._check")  # the command's own package
    app: Any = importlib.import_module("agent_stores.cli._app").app

    with (
        _recording_logs() as logs,
        warnings.catch_warnings(record=True) as caught,
        pytest.MonkeyPatch.context() as patch,
    ):
        warnings.simplefilter("always")
        patch.setattr(check_module, "run_plan", _refuse_to_run)
        result = CliRunner().invoke(app, ["check", url, "--suite", "sessions", "--json", "--verbose"])
    shown = [result.stdout, result.stderr, *logs.lines, *(str(w.message) for w in caught)]
    error = result.exception
    if error is not None and not isinstance(error, SystemExit):
        shown.append("".join(traceback.format_exception(error)))
    return result.exit_code, "\n".join(shown)


@dataclass(frozen=True)
class StoreURLCapabilities:
    """The error paths of ``agent-stores check`` the class's URLs reach, and whether the backend has boolean options.

    A backend whose URLs carry no secret on a path (an S3 URL takes no credentials, so every
    ``s3://`` URL holding one is malformed) leaves that path off.

    Attributes:
        unreachable: ``store_urls["unreachable"]``: URLs of a server that does not answer.
        refused: ``store_urls["refused"]``: URLs of a server that refuses the credentials.
        malformed: ``store_urls["malformed"]``: URLs the backend's parser refuses (a bad
            port, database or option) while they hold a secret.
        wrong_tls: ``store_urls["wrong_tls"]``: URLs whose TLS fails (a plaintext server, a
            certificate the client refuses).
        boolean_options: ``boolean_url_options`` names the URL options the backend reads as booleans.
    """

    unreachable: bool = False
    refused: bool = False
    malformed: bool = False
    wrong_tls: bool = False
    boolean_options: bool = False


class StoreURLConformance(ConformanceBase):
    """No secret of a store URL in what ``agent-stores check`` shows, on any error path; strict boolean options."""

    capabilities: ClassVar[StoreURLCapabilities] = StoreURLCapabilities()
    factory_fixture: ClassVar[str] = "store_urls"

    @pytest.fixture
    def store_urls(self) -> Mapping[str, Sequence[str]]:
        """Error path (:data:`ErrorPath`) to URL templates holding :data:`SECRET`: override it."""
        return {}

    @pytest.fixture
    def boolean_url_options(self) -> Mapping[str, str | Sequence[str]]:
        """Boolean option name to URL templates holding :data:`VALUE`: override it with ``boolean_options``."""
        return {}

    async def _check_keeps_secrets(self, store_urls: Mapping[str, Sequence[str]], path: ErrorPath) -> None:
        templates = store_urls.get(path)
        if isinstance(templates, str):
            templates = [templates]
        if not templates or any(SECRET not in t for t in templates):
            pytest.fail(f"store_urls[{path!r}] must be URL templates each holding {SECRET!r}", pytrace=False)
        for template in templates:
            for password, pieces in hostile_passwords():
                for written in (password, quote(password, safe="")):
                    url = template.replace(SECRET, written)
                    code, shown = await asyncio.to_thread(run_check_command, url)
                    leaked = [p for p in pieces if p in shown]
                    shown_url = template.replace(
                        SECRET, "<a password holding " + "".join(sorted(set(password) & set(_SPECIALS))) + ">"
                    )
                    if leaked:
                        line = next(line for line in shown.splitlines() if any(p in line for p in leaked))
                        form = "raw" if written == password else "percent-encoded"
                        pytest.fail(
                            f"{path}: `agent-stores check {shown_url}` (password written {form}) "
                            f"showed the password: {line.strip()}",
                            pytrace=False,
                        )
                    if _ReachedTheStore.__name__ in shown or code != _EXIT_USAGE:
                        pytest.fail(
                            f"{path}: `agent-stores check {shown_url}` did not stop on an error (exit {code}); "
                            f"store_urls[{path!r}] must name URLs that fail:\n{shown[-2000:]}",
                            pytrace=False,
                        )

    @requires("unreachable")
    async def test_check_of_an_unreachable_store_never_shows_its_password(
        self, store_urls: Mapping[str, Sequence[str]]
    ) -> None:
        """A server that does not answer: the "cannot reach" line and its cause hold no password."""
        await self._check_keeps_secrets(store_urls, "unreachable")

    @requires("refused")
    async def test_check_of_refused_credentials_never_shows_the_password(
        self, store_urls: Mapping[str, Sequence[str]]
    ) -> None:
        """A server that refuses the credentials: the error names the store, never the password."""
        await self._check_keeps_secrets(store_urls, "refused")

    @requires("malformed")
    async def test_check_of_a_malformed_url_never_shows_its_password(
        self, store_urls: Mapping[str, Sequence[str]]
    ) -> None:
        """A URL the parser refuses: the message names the wrong part without quoting the user part."""
        await self._check_keeps_secrets(store_urls, "malformed")

    @requires("wrong_tls")
    async def test_check_of_a_failed_tls_handshake_never_shows_the_password(
        self, store_urls: Mapping[str, Sequence[str]]
    ) -> None:
        """A TLS handshake that fails (plaintext server, refused certificate): no password in the error."""
        await self._check_keeps_secrets(store_urls, "wrong_tls")

    @requires("boolean_options")
    async def test_boolean_url_options_take_only_known_spellings(
        self, boolean_url_options: Mapping[str, str | Sequence[str]]
    ) -> None:
        """``1/true/yes/on``, ``0/false/no/off`` (any case) open; any other spelling is a ``ValueError`` naming it."""
        cases = [(o, t) for o, ts in boolean_url_options.items() for t in ([ts] if isinstance(ts, str) else ts)]
        if not cases or any(VALUE not in t for _, t in cases):
            pytest.fail(f"boolean_url_options must map option names to URL templates holding {VALUE!r}", pytrace=False)
        for option, template in cases:
            for spelling in (*BAD_BOOLEANS, *GOOD_BOOLEANS):
                problem = await _open_and_close(template.replace(VALUE, spelling))
                if spelling in GOOD_BOOLEANS and problem is not None:
                    pytest.fail(f"{option}={spelling!r} was refused: {problem}", pytrace=False)
                if spelling in BAD_BOOLEANS and problem is None:
                    pytest.fail(
                        f"{option}={spelling!r} was accepted: an unknown spelling of a boolean must be a ValueError "
                        "(a lenient parser reads it as false and may switch a check off)",
                        pytrace=False,
                    )
                if spelling in BAD_BOOLEANS and option not in str(problem):
                    pytest.fail(
                        f"{option}={spelling!r}: the ValueError does not name the option: {problem}", pytrace=False
                    )


async def _open_and_close(url: str) -> ValueError | None:
    """The ``ValueError`` ``open_stores(url)`` raises, or ``None`` once the stores it opened are closed."""
    try:
        stores = open_stores(url)
    except ValueError as err:
        return err
    await stores.aclose()
    return None
