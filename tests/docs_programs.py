"""The code blocks of README.md and docs/, the files under examples/ they are, and how to run one as pasted.

A Python block is a whole program: the whole of a file under ``examples/``, or of one after its
module docstring (the prose around the block says what the docstring would). ``run_pasted`` runs
such a program as a user who pasted it would: ``python -c`` text in a folder of its own, with
every warning an error.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_BLOCK = re.compile(r"^```(python|toml)\n(.*?)^```", re.S | re.M)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a document."""

    doc: Path
    line: int
    language: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc.relative_to(ROOT)}:{self.line}"


def blocks(doc: Path) -> list[Block]:
    """Every ``python`` and ``toml`` block of ``doc``, with the line its fence opens on."""
    text = doc.read_text()
    return [
        Block(doc, text.count("\n", 0, match.start()) + 1, match.group(1), match.group(2))
        for match in _BLOCK.finditer(text)
    ]


def program_of(path: Path) -> str:
    """The text of ``path`` after its module docstring (the whole text when it has none)."""
    text = path.read_text()
    if path.suffix != ".py":
        return text
    body = ast.parse(text).body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        lines = text.splitlines(keepends=True)
        return "".join(lines[body[0].end_lineno or 0 :]).lstrip("\n")
    return text


def example_files() -> list[Path]:
    return sorted(path for path in EXAMPLES.rglob("*") if path.suffix in {".py", ".toml"})


def example_of(block: Block) -> Path | None:
    """The file under ``examples/`` that ``block`` is whole (or whole after its docstring), if any."""
    for path in example_files():
        if block.text in (path.read_text(), program_of(path)):
            return path
    return None


def run_pasted(
    program: str, *args: str, cwd: Path, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``program`` as ``python -W error::Warning -c PROGRAM ARGS`` in ``cwd``; return the finished process."""
    return subprocess.run(
        [sys.executable, "-W", "error::Warning", "-c", program, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
