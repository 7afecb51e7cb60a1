"""The adversarial identifier fragments every suite draws from, and the named filters that select part of them.

A clause that needs a subset (ids every store must keep, fragments a key prefix must match
literally) takes it through a filter here, never through a copy of the list.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable

__all__ = [
    "ADVERSARIAL_FRAGMENTS",
    "adversarial_ids",
    "has_separator",
    "pattern_like",
    "refusable",
    "storable",
]

_E_ACUTE_NFC = "\u00e9"
_E_ACUTE_NFD = unicodedata.normalize("NFD", _E_ACUTE_NFC)

#: Traversal and path separators, alone and inside a name.
_PATHS = (
    "..", "../", "../x", "../../etc/passwd", "/", "//", "/..", "/.", "\\", "..\\", "./", ".", "C:", "C:\\x",
    "~", "~/", "a/b", "a\\b", "a_b", "a-b", "a:b", "a::b", "a.b", ":",
)  # fmt: skip
#: Percent-encoding and format strings: an id must never be URL-decoded or formatted.
_ENCODINGS = ("%s", "%%", "a%2Fb", "a%2fb")
#: NUL and control characters.
_CONTROLS = ("\x00", "a\x00b", "\x00\xff", "\n", "a\n", "\r\n", "\t", "a\t", "\x1b[31m", "\x7f", "\x01", "\u2028",
             "\ufeff", "\u202e")  # fmt: skip
#: Glob, regex and SQL ``LIKE`` metacharacters.
_PATTERNS = (
    "*", "**", "?", "[", "]", "[a-z]", "[ab]", "[!x]", "{a,b}", ".*", "^", "$", "^$", "|", "(", ")", "+", "\\d",
    "%", "_",
)  # fmt: skip
#: MongoDB operator shapes and dotted names.
_OPERATORS = ("$ne", "$gt", "$where", "$regex", "$.x", '{"$ne": null}', "system.x")
#: Redis hash tags, Lua-significant bytes and quotes.
_SCRIPTS = ("{", "}", "{x}", "{x", "{tag}", "--", "--[[", "]]", "'", '"', ";", "\\0")
#: The key derivation's own markers and the suffixes stores put on names.
_MARKERS = ("~sha256-", "~abc", "~x", ".json", "x.json", ".corrupt", "s0000", "records", "workflows")
#: Case, Unicode normalisation, reserved device names and whitespace.
_TWINS = (
    "A", "a", "K", "\u212a", "\u00df", "ss", "\u0130", "CON", "con", "nul", "aux.txt",
    " ", "  a  ", "a ", " a", "\u00a0",
    _E_ACUTE_NFC, _E_ACUTE_NFD, "\u00fc", "\u00c5", "A\u030a", "\u65e5\u672c", "\U0001f600", "\U0001f642",
)  # fmt: skip
#: Text that is not valid Unicode (lone surrogates: no UTF-8 encoding exists).
_NOT_UNICODE = ("\ud800", "\udcff")

#: Every adversarial fragment, each once. Suites build ids from them (a unique base with a
#: fragment before or after it) and the hostile-input clauses mix them into drawn text.
ADVERSARIAL_FRAGMENTS: tuple[str, ...] = tuple(
    dict.fromkeys(
        (*_PATHS, *_ENCODINGS, *_CONTROLS, *_PATTERNS, *_OPERATORS, *_SCRIPTS, *_MARKERS, *_TWINS, *_NOT_UNICODE)
    )
)

_PATTERN_SET = frozenset(_PATTERNS) | {"\\", "."}


def refusable(fragment: str) -> bool:
    """Whether a store may refuse an id holding ``fragment`` with ``ValueError``.

    NUL (a SQL ``text`` column cannot hold it) and text that is not Unicode (a lone surrogate
    has no UTF-8 encoding) may be refused; every other id must be kept.
    """
    return "\x00" in fragment or any(0xD800 <= ord(c) <= 0xDFFF for c in fragment)


def storable(fragment: str) -> bool:
    """Whether every store must keep an id holding ``fragment`` (it is not :func:`refusable`)."""
    return not refusable(fragment)


def has_separator(fragment: str) -> bool:
    """Whether ``fragment`` holds a path separator (a slash or a backslash)."""
    return "/" in fragment or "\\" in fragment


def pattern_like(fragment: str) -> bool:
    """Whether ``fragment`` is a key-prefix fragment a pattern-matching listing would misread.

    Glob, regex and SQL ``LIKE`` metacharacters, and printable non-ASCII text (compared by code
    point, never by bytes or after normalisation); never a ``/``, so a key built from it does
    not nest.
    """
    if fragment in _PATTERN_SET:
        return True
    return not fragment.isascii() and fragment.isprintable() and storable(fragment) and "/" not in fragment


def adversarial_ids(base: str, *, where: Callable[[str], bool] = storable, before: bool = False) -> list[str]:
    """Return ``base`` and ``base`` followed by each fragment ``where`` keeps (with ``before``, also preceded by it).

    Raises:
        AssertionError: Two of the ids are equal (the list would not test distinctness).
    """
    fragments = [f for f in ADVERSARIAL_FRAGMENTS if where(f)]
    ids = [base, *(base + f for f in fragments)]
    if before:
        ids += [f + base for f in fragments]
    assert len(set(ids)) == len(ids), "the adversarial ids must be distinct"
    return ids
