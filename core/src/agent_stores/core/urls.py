"""What every backend's URL parser shares: strict readers of option values, a user part that must be escaped.

One reader per kind of value: a boolean (:func:`parse_bool`), a size in bytes
(:func:`parse_bytes`), a count (:func:`parse_count`, :func:`parse_optional_count`) and a
duration (:func:`parse_seconds`). Each takes the text of a URL's query or a keyword's value,
and the class that takes the option calls the same reader, so a URL and code follow one rule.

``docs/security.md`` says why: a lenient boolean turned ``ssl_check_hostname=required`` into
*false*, and a password holding an unescaped ``#`` was read as a host name and shown in errors.
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Final

__all__ = [
    "FALSE_SPELLINGS",
    "NONE_SPELLING",
    "TRUE_SPELLINGS",
    "check_user_part",
    "parse_bool",
    "parse_bytes",
    "parse_count",
    "parse_optional_count",
    "parse_seconds",
]

#: The spellings of true every boolean option takes (compared case-insensitively).
TRUE_SPELLINGS: Final = frozenset({"1", "true", "yes", "on"})
#: The spellings of false every boolean option takes (compared case-insensitively).
FALSE_SPELLINGS: Final = frozenset({"0", "false", "no", "off"})
#: How a URL spells ``None`` for an option that takes it (compared case-insensitively).
NONE_SPELLING: Final = "none"

_SHOWN = 40
_BAD_ESCAPE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")
# Seconds in a URL: decimal digits with an optional fraction (no sign, exponent, space, inf or nan).
_DECIMAL: Final = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")


def _shown(value: object) -> str:
    """How an error shows a refused value: text quoted (cut at 40 characters), a number as is, else its type."""
    if isinstance(value, str):
        return repr(value) if len(value) <= _SHOWN else f"{value[:_SHOWN]!r}..."
    if isinstance(value, int | float) and not isinstance(value, bool):
        return repr(value)
    return f"a {type(value).__name__}"


def _whole(value: object, minimum: int) -> int | None:
    """``value`` as a whole number of at least ``minimum`` (an ``int`` or its ASCII digits), else ``None``."""
    if isinstance(value, str):
        number = int(value) if value.isascii() and value.isdigit() else None
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        return None
    return number if number is not None and number >= minimum else None


def parse_bool(value: object, *, option: str) -> bool:
    """Read a boolean option: ``1/true/yes/on`` or ``0/false/no/off`` (any case), a ``bool``, or the ints 0 and 1.

    Raises:
        ValueError: Anything else (``required``, ``t``, an empty value, ``2``, ``" true"``),
            naming ``option``: an unknown spelling never reads as false.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.lower()
        if text in TRUE_SPELLINGS:
            return True
        if text in FALSE_SPELLINGS:
            return False
        shown = _shown(value)
    else:
        shown = f"a {type(value).__name__}"
    raise ValueError(f"option {option} takes 1, true, yes, on or 0, false, no, off; got {shown}")


def parse_bytes(value: object, *, option: str) -> int:
    """Read a size in bytes: a whole non-negative number (``0``, ``8388608``), as an ``int`` or as its digits.

    Raises:
        ValueError: Anything else (``-1``, ``1.5``, ``8MiB``, ``" 8"``, an empty value, a ``bool``), naming ``option``.
    """
    number = _whole(value, 0)
    if number is None:
        raise ValueError(f"option {option} takes a whole non-negative number of bytes; got {_shown(value)}")
    return number


def parse_count(value: object, *, option: str) -> int:
    """Read a count: a whole positive number (``1``, ``32``), as an ``int`` or as its digits.

    Raises:
        ValueError: Anything else (``0``, ``-1``, ``1.5``, ``" 8"``, ``1e3``, an empty value, a
            ``bool``), naming ``option``.
    """
    number = _whole(value, 1)
    if number is None:
        raise ValueError(f"option {option} takes a whole positive number; got {_shown(value)}")
    return number


def parse_optional_count(value: object, *, option: str) -> int | None:
    """Read a count that may be absent: a whole non-negative number, or ``None`` (``none`` in a URL, any case).

    Raises:
        ValueError: Anything else (``-1``, ``1.5``, ``null``, an empty value, a ``bool``), naming ``option``.
    """
    if value is None or (isinstance(value, str) and value.lower() == NONE_SPELLING):
        return None
    number = _whole(value, 0)
    if number is None:
        raise ValueError(f"option {option} takes a whole non-negative number or none; got {_shown(value)}")
    return number


def parse_seconds(value: object, *, option: str, zero: bool = False) -> float:
    """Read a duration: a positive, finite number of seconds (``60``, ``0.5``), as a number or as its decimal digits.

    ``zero``: ``0`` is a duration too (for an option where it means "every time").

    Raises:
        ValueError: Anything else (``0`` unless ``zero``, ``-1``, ``inf``, ``nan``, ``1e3``,
            ``60s``, ``" 60"``, an empty value, a ``bool``), naming ``option``.
    """
    seconds: float | None = None
    if isinstance(value, str):
        seconds = float(value) if value.isascii() and _DECIMAL.fullmatch(value) else None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):  # an int too large for a float
            seconds = float(value)
    if seconds is None or not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero):
        kind = "a finite, non-negative number of seconds" if zero else "a positive, finite number of seconds"
        raise ValueError(f"option {option} takes {kind}; got {_shown(value)}")
    return seconds


def check_user_part(url: str, *, what: str = "store URL") -> None:
    """Refuse a URL whose user part a parser would misread, without quoting any of it.

    The user part is what precedes the last ``@`` of the authority (``scheme://user:password@host``).
    A ``/``, ``?`` or ``#`` in it ends the authority early (``redis://:pw#x@host`` reads as host
    ``:pw``), so an authority followed by an ``@`` later in the URL is refused, as is a ``%`` in
    the user part that starts no ``%XX`` escape. ``:`` and ``@`` need no escape in a password.
    A URL with an empty authority (``file:///a@b``) or none (``sqlite:relative``) passes.

    Raises:
        ValueError: Naming ``what`` and the escape to use, never the user part itself.
    """
    _, sep, rest = url.partition("://")
    if not sep:
        return
    end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority, after = rest[:end], rest[end:]
    if authority and "@" in after:
        raise ValueError(
            f"malformed {what}: a '/', '?' or '#' in the user name or password, or an '@' after the host, "
            "must be percent-encoded (%2F, %3F, %23, %40)"
        )
    user_part = authority.rpartition("@")[0]
    if _BAD_ESCAPE.search(user_part):
        raise ValueError(f"malformed {what}: a '%' in the user name or password must be written %25")
