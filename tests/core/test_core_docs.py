"""Docs run as written: every Python block of the README and of ``docs/`` is code from a file under ``examples/``."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
EXAMPLES = {path: path.read_text() for path in (ROOT / "examples").rglob("*") if path.suffix in {".py", ".toml"}}
_BLOCK = re.compile(r"^```(python|toml)\n(.*?)^```", re.S | re.M)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in textwrap.dedent(text).strip("\n").splitlines()]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    stripped = [line.strip() for line in haystack]
    wanted = [line.strip() for line in needle]
    return any(stripped[i : i + len(wanted)] == wanted for i in range(len(stripped) - len(wanted) + 1))


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_code_block_is_code_from_an_example_file(doc: Path) -> None:
    for match in _BLOCK.finditer(doc.read_text()):
        block = _lines(match.group(2))
        found = any(_contains(_lines(text), block) for text in EXAMPLES.values())
        assert found, f"{doc.relative_to(ROOT)}: this block is in no file under examples/:\n" + "\n".join(block[:12])


def test_every_example_file_is_run_by_a_test() -> None:
    tests = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("*.py"))
    for path in EXAMPLES:
        if path.suffix == ".py" and path.parent == ROOT / "examples":
            assert path.name in tests, f"no test mentions examples/{path.name}"


def test_links_between_docs_resolve() -> None:
    for doc in DOCS:
        for target in re.findall(r"\]\((?!https?://|#)([^)#]+)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to a missing {target}"
