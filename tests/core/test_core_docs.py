"""Docs run as written: every Python block of the README and of ``docs/`` is a whole program a user can paste.

The rule: a block is the whole of a file under ``examples/`` (or of one after its module
docstring); it compiles, imports or defines every name it uses, and is either a script (its
``asyncio.run`` under ``if __name__ == "__main__":``) or a pytest module. A block that needs no
server and no model runs here as pasted (``python -W error::Warning -c``, in an empty folder:
exit 0, nothing on stderr); the others are run as pasted, or as the very file they are, by the
test ``RUN_ELSEWHERE`` names.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import subprocess
import symtable
import sys
from pathlib import Path

import pytest
from docs_programs import DOCS, EXAMPLES, ROOT, Block, blocks, example_files, example_of, program_of, run_pasted

BLOCKS = [block for doc in DOCS for block in blocks(doc)]
PYTHON = [block for block in BLOCKS if block.language == "python"]

#: Programs that need no server and no model: the arguments of each run, in order, in one folder.
RUN_HERE: dict[str, list[list[str]]] = {
    "quickstart.py": [[]],
    "borrow_or_own.py": [[]],
    "encrypted_stores.py": [[], []],
    "fsspec_folder.py": [["agent-folder"]],
    "store_options.py": [["agent-options"]],
    "workflow_checkpoints.py": [["sqlite:///workflow.db", "start"], ["sqlite:///workflow.db", "resume"]],
    "telemetry_console.py": [[]],
}
#: Pytest modules that need no server: run as pasted into a file of a folder with no configuration.
PYTEST_HERE = {"test_session_store.py"}
#: Programs that need a server or a model, and the test that runs them.
RUN_ELSEWHERE = {
    "remember.py": "tests/harness/test_agents_wiring_examples.py",
    "agent_history.py": "tests/harness/test_agents_wiring_examples.py",
    "harness_agent.py": "tests/harness/test_agents_wiring_examples.py",
    "long_conversation.py": "tests/harness/test_agents_wiring_examples.py",
    "hosted_tenants.py": "tests/harness/test_agents_wiring_examples.py",
    "redis_quickstart.py": "tests/redis/test_redis_backend.py",
    "mongodb_quickstart.py": "tests/mongodb/test_mongodb_backend.py",
    "postgresql_quickstart.py": "tests/postgresql/test_postgresql_backend.py",
    "s3_stores.py": "tests/s3/test_s3_examples.py",
    "test_dict_backend.py": "tests/suites/test_suites_driver_example.py",
    "pyproject.toml": "tests/suites/test_suites_driver_example.py",
}
#: Names every module has, also under ``python -c`` (``__file__`` is not one of them).
_MODULE_NAMES = {"__name__", "__doc__", "__builtins__", "__spec__", "__loader__", "__package__"}


def _example(block: Block) -> Path:
    path = example_of(block)
    assert path is not None, (
        f"{block.where}: this {block.language} block is not the whole of any file under examples/ (nor of one "
        "after its module docstring). Make it a whole program there, a test runs it, and paste it whole:\n"
        + "\n".join(block.text.splitlines()[:8])
    )
    return path


def _unbound_names(source: str) -> set[str]:
    """Names ``source`` reads that it never imports, defines or assigns, and that are no builtin."""
    module = symtable.symtable(source, "<block>", "exec")
    bound = {s.get_name() for s in module.get_symbols() if s.is_assigned() or s.is_imported()}
    known = bound | set(dir(builtins)) | _MODULE_NAMES
    unbound: set[str] = set()
    pending = [module]
    while pending:
        table = pending.pop()
        pending.extend(table.get_children())
        for symbol in table.get_symbols():
            reads_a_global = table is module or symbol.is_global()
            if symbol.is_referenced() and reads_a_global and symbol.get_name() not in known:
                unbound.add(symbol.get_name())
    return unbound


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in {"__name__ == '__main__'", "'__main__' == __name__"}


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_code_block_is_a_whole_example_file(doc: Path) -> None:
    for block in blocks(doc):
        _example(block)


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_every_python_block_is_a_whole_program(block: Block) -> None:
    path = _example(block)
    try:
        tree = ast.parse(block.text)
    except SyntaxError as err:
        pytest.fail(f"{block.where}: the block does not compile: {err}", pytrace=False)
    unbound = _unbound_names(block.text)
    assert not unbound, f"{block.where}: the block uses {sorted(unbound)} without importing or defining them"
    if path.name.startswith("test_"):
        assert any(isinstance(node, ast.ClassDef) for node in tree.body), f"{block.where}: a test module without tests"
        return
    guards = [node for node in tree.body if _is_main_guard(node)]
    assert guards, f'{block.where}: a script runs its work under `if __name__ == "__main__":`'
    defines_async = any(isinstance(node, ast.AsyncFunctionDef) for node in ast.walk(tree))
    runs = any("asyncio.run(" in ast.unparse(guard) for guard in guards)
    assert runs or not defines_async, f"{block.where}: its coroutines never run (no asyncio.run under the guard)"


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_a_block_that_needs_no_server_runs_as_pasted(block: Block, tmp_path: Path) -> None:
    name = _example(block).name
    if name in RUN_ELSEWHERE:
        runner = ROOT / RUN_ELSEWHERE[name]
        assert name in runner.read_text(), f"{block.where}: {RUN_ELSEWHERE[name]} no longer runs examples/{name}"
        return
    if name in PYTEST_HERE:
        (tmp_path / name).write_text(block.text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", "--rootdir", ".", name],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, f"{block.where}, pasted into {name}:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        assert re.search(r"\d+ passed", done.stdout), done.stdout
        return
    assert name in RUN_HERE, f"{block.where}: examples/{name} is in neither RUN_HERE nor RUN_ELSEWHERE"
    for args in RUN_HERE[name]:
        done = run_pasted(block.text, *args, cwd=tmp_path)
        assert done.returncode == 0, f"{block.where}, pasted with arguments {args}, failed:\n{done.stderr[-3000:]}"
        assert done.stderr == "", f"{block.where}, pasted with arguments {args}, wrote to stderr:\n{done.stderr}"
        assert done.stdout.strip(), f"{block.where}, pasted with arguments {args}, printed nothing"


def test_every_example_file_is_run_by_a_test() -> None:
    tests = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("*.py"))
    for path in example_files():
        if path.suffix == ".py" and path.parent == EXAMPLES:
            assert path.name in tests, f"no test mentions examples/{path.name}"


def test_programs_are_read_without_their_docstring(tmp_path: Path) -> None:
    """The rule's own helper: a docstring and the blank lines after it go, everything else stays."""
    path = tmp_path / "example.py"
    path.write_text('"""Doc.\n\nMore.\n"""\n\nimport asyncio\n')
    assert program_of(path) == "import asyncio\n"
    path.write_text("import asyncio\n")
    assert program_of(path) == "import asyncio\n"
    assert _unbound_names("import asyncio\nasync def f():\n    return asyncio, g, __file__\n") == {"g", "__file__"}
    assert _unbound_names("def f():\n    x = 1\n    return [x for _ in range(2)]\n") == set()


def test_links_between_docs_resolve() -> None:
    for doc in DOCS:
        for target in re.findall(r"\]\((?!https?://|#)([^)#]+)", doc.read_text()):
            assert (doc.parent / target).exists(), f"{doc.relative_to(ROOT)} links to a missing {target}"
