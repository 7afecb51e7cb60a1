"""``agent-stores keyring create``, ``forget``, and ``check`` over sealed stores (SQLite, SeaweedFS), in process."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import warnings
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import open_stores
from agent_stores.core.sealing import KEYS_OBJECT, MARKER, Keyring, SealedStores
from cli_support import Bucket

warnings.filterwarnings("ignore", message=r".*is experimental")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_keyring_create_writes_a_private_keyring_and_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "keyring.json"
    code, stdout, _ = run("keyring", "create", str(path), "--json")
    assert code == 0, stdout
    made = json.loads(stdout)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert Keyring.load(path).key_id == made["key_id"]
    before = path.read_bytes()
    code, _, stderr = run("keyring", "create", str(path))
    assert code == 2 and "never overwritten" in stderr
    assert path.read_bytes() == before


def test_forget_destroys_the_key_and_the_data_without_a_keyring(tmp_path: Path) -> None:
    keyring_path = tmp_path / "keyring.json"
    Keyring.create(keyring_path)
    sealed_url = f"sqlite:///{tmp_path / 'agent.db'}?keyring={keyring_path}"

    async def seed() -> None:
        async with open_stores(sealed_url) as stores:
            assert isinstance(stores, SealedStores)
            for tenant in ("acme", "other"):
                await stores.tenant(tenant).history_provider().save_messages("s", [Message("user", ["hi"])])
                await stores.tenant(tenant).file_store().write("a.md", "x")

    async def left(tenant: str) -> list[str]:
        async with open_stores(f"sqlite:///{tmp_path / 'agent.db'}", encryption=False) as stores:
            listing = await stores.object_driver().list(f"tenants/{tenant}/", delimiter=None)
            return listing.keys

    asyncio.run(seed())
    assert f"tenants/acme/{KEYS_OBJECT}" in asyncio.run(left("acme"))
    code, stdout, stderr = run("forget", f"sqlite:///{tmp_path / 'agent.db'}", "--tenant", "acme", "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["deleted"] == 2
    assert asyncio.run(left("acme")) == []
    assert f"tenants/other/{KEYS_OBJECT}" in asyncio.run(left("other"))


def test_forget_of_a_missing_store_is_an_error(tmp_path: Path) -> None:
    code, _, stderr = run("forget", f"sqlite:///{tmp_path / 'none.db'}", "--tenant", "acme")
    assert code == 2 and "none.db" in stderr
    assert not (tmp_path / "none.db").exists()


STORE_SUITES = ("history", "files", "sessions", "checkpoints", "todos")


def check_passes(url: str, *suites: str) -> dict[str, object]:
    code, stdout, _ = run("check", url, *(arg for suite in suites for arg in ("--suite", suite)), "--json")
    report = json.loads(stdout)
    failed = [c for c in report.get("clauses", []) if c.get("outcome") == "failed"]
    assert code == 0, json.dumps(failed, indent=1)
    return report


async def _stored_keys(url: str) -> tuple[list[str], list[str]]:
    """Every object key and log key of a store, as the drivers under the sealing layer hold them."""
    async with open_stores(url, encryption=False) as stores:
        objects = (await stores.object_driver().list("", delimiter=None)).keys
        logs = [log.key for log in await stores.log_driver().list_logs("", limit=1000)]
        return objects, logs


def test_every_suite_passes_over_a_sealed_sqlite_store(tmp_path: Path) -> None:
    """``agent-stores check`` runs every suite, driver suites too, through the sealing layer (keyring in the URL).

    With a sealed URL it runs the encryption clause set too, with the URL's keyring, in tenants
    of its own that it forgets afterwards: the user's store is left as it was found.
    """
    keyring_path = tmp_path / "keyring.json"
    Keyring.create(keyring_path)
    url = f"sqlite:///{tmp_path / 'agent.db'}?keyring={keyring_path}"

    async def seed() -> None:
        async with open_stores(url) as stores:
            await stores.history_provider().save_messages("mine", [Message("user", ["hi"])])
            await stores.file_store().write("mine.md", "kept")  # the root's data key exists before the check
            await stores.tenant("acme").file_store().write("a.md", "kept")

    asyncio.run(seed())
    before = asyncio.run(_stored_keys(f"sqlite:///{tmp_path / 'agent.db'}"))
    report = check_passes(url)
    assert set(report["suites"]) == {*STORE_SUITES, "log_driver", "object_driver", "sealing"}  # type: ignore[arg-type]
    sealing = [c for c in report["clauses"] if c["suite"] == "sealing"]  # type: ignore[union-attr,index]
    assert len(sealing) == 12 and all(c["outcome"] == "passed" for c in sealing), sealing
    assert asyncio.run(_stored_keys(f"sqlite:///{tmp_path / 'agent.db'}")) == before


def test_check_of_a_broken_sealing_layer_fails_the_clauses_its_bug_breaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``module:attr`` returning sealed stores for a key provider gets the sealing suite: a leaky layer fails it."""
    (tmp_path / "leaky_stores.py").write_text(
        "from pathlib import Path\n"
        "from test_suites_sealing import _LeakyStores, sealed_sqlite\n\n"
        "def open_leaky(provider):\n"
        "    return sealed_sqlite(Path('agent.db'), provider, _LeakyStores)\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "suites"))
    code, stdout, _ = run("check", "leaky_stores:open_leaky", "--json")
    report = json.loads(stdout)
    assert code == 1 and report["suites"] == ["sealing"]
    failed = {c["clause"] for c in report["clauses"] if c["outcome"] == "failed"}
    assert failed == {
        "test_nothing_below_the_sealing_layer_is_readable",
        "test_a_wrong_key_provider_is_a_clear_error_and_writes_nothing",
        "test_tampered_and_truncated_values_are_corrupt",
        "test_values_copied_to_another_tenant_or_key_are_corrupt",
        "test_after_forget_a_copy_of_the_data_does_not_decrypt",
        "test_a_new_data_key_seals_new_writes_and_old_records_stay_readable",
        "test_resealed_objects_need_only_the_new_data_key",
    }


def test_the_sealing_suite_needs_a_sealed_url_that_can_be_reopened(tmp_path: Path) -> None:
    """A plain URL has no sealing suite; nor has an in-process one, even with a keyring option in its query."""
    code, _, stderr = run("check", f"sqlite:///{tmp_path / 'agent.db'}", "--suite", "sealing")
    assert code == 2 and "does not open sealed stores" in stderr and "keyring=" in stderr
    Keyring.create(tmp_path / "keyring.json")
    code, _, stderr = run("check", f"sqlite://?keyring={tmp_path / 'keyring.json'}", "--suite", "sealing")
    assert code == 2 and "in-process only" in stderr


def test_file_and_session_suites_pass_over_a_sealed_folder(tmp_path: Path) -> None:
    """``check`` opens each store through the sealed stores (a folder's file store is its own class, not the driver's).

    A folder keeps directory markers as real directories, which hold no bytes: the sealing layer
    leaves an empty marker empty, and the open check does not take one for plaintext.
    """
    keyring_path = tmp_path / "keyring.json"
    Keyring.create(keyring_path)
    report = check_passes(f"file://{tmp_path / 'store'}?keyring={keyring_path}", "files", "sessions")
    assert set(report["suites"]) == {"files", "sessions"}  # type: ignore[arg-type]


@pytest.mark.skipif(
    os.environ.get("AGENT_STORES_HEAVY") != "1", reason="every suite on a live store: set AGENT_STORES_HEAVY=1"
)
def test_every_store_suite_passes_over_a_sealed_s3_store(tmp_path: Path, bucket: Bucket) -> None:
    """The store suites on SeaweedFS through the sealing layer.

    The driver suites are left out: SeaweedFS stores keys as paths, and its divergences from the
    driver suites (tests/s3/test_s3_driver_conformance.py) are declared by those tests, not by
    the backend; the sealing drivers pass the driver suites over SQLite and memory.
    """
    keyring_path = tmp_path / "keyring.json"
    Keyring.create(keyring_path)
    report = check_passes(bucket.url(f"sealed-{tmp_path.name}") + f"&keyring={keyring_path}", *STORE_SUITES)
    assert set(report["suites"]) == set(STORE_SUITES)  # type: ignore[arg-type]


def test_keyring_rotate_then_rekey_lets_the_new_key_alone_open_the_store(tmp_path: Path) -> None:
    keyring_path = tmp_path / "keyring.json"
    old = Keyring.create(keyring_path)
    url = f"sqlite:///{tmp_path / 'agent.db'}?keyring={keyring_path}"

    async def write() -> None:
        async with open_stores(url) as stores:
            await stores.tenant("acme").file_store().write("a.md", "kept")

    asyncio.run(write())
    code, stdout, stderr = run("keyring", "rotate", str(keyring_path), "--json")
    assert code == 0, stderr
    rotated = Keyring.load(keyring_path)
    assert json.loads(stdout)["key_id"] == rotated.key_id != old.key_id
    assert stat.S_IMODE(keyring_path.stat().st_mode) == 0o600
    code, stdout, stderr = run("rekey", url, "--json")
    assert code == 0, stderr
    assert json.loads(stdout)["rewrapped"] == 1
    only_new = Keyring(rotated.current, {rotated.current: rotated.keys[rotated.current]})

    async def read() -> str:
        async with open_stores(f"sqlite:///{tmp_path / 'agent.db'}", encryption=only_new) as stores:
            return await stores.tenant("acme").file_store().read("a.md")

    assert asyncio.run(read()) == "kept"


def test_rekey_without_a_keyring_is_an_error(tmp_path: Path) -> None:
    Keyring.create(tmp_path / "keyring.json")
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    asyncio.run(_touch(url))
    code, _, stderr = run("rekey", url)
    assert code == 2 and "AGENT_STORES_KEYRING" in stderr


async def _touch(url: str) -> None:
    async with open_stores(url, encryption=False) as stores:
        await stores.file_store().write("a.md", "x")


def test_migrate_moves_a_plain_store_into_a_sealed_one_and_back(tmp_path: Path) -> None:
    """``migrate`` copies and verifies every item through the sealing layer; the sealed file holds no plaintext."""
    keyring_path = tmp_path / "keyring.json"
    Keyring.create(keyring_path)
    plain, sealed, back = (f"sqlite:///{tmp_path / name}" for name in ("plain.db", "sealed.db", "back.db"))
    secret = "migrated-secret-3141"

    async def seed() -> None:
        async with open_stores(plain, encryption=False) as stores:
            await stores.history_provider().save_messages("s1", [Message("user", [secret])])
            await stores.tenant("acme").file_store().write("m/a.md", secret)

    async def read(url: str) -> list[str]:
        async with open_stores(url) as stores:
            messages = await stores.history_provider().get_messages("s1")
            return [messages[0].text, await stores.tenant("acme").file_store().read("m/a.md")]

    asyncio.run(seed())
    code, _, stderr = run("migrate", plain, f"{sealed}?keyring={keyring_path}")
    assert code == 0, stderr
    assert not any(secret.encode() in p.read_bytes() for p in tmp_path.glob("sealed.db*"))
    assert asyncio.run(read(f"{sealed}?keyring={keyring_path}")) == [secret, secret]
    code, _, stderr = run("migrate", f"{sealed}?keyring={keyring_path}", back)
    assert code == 0, stderr
    assert asyncio.run(read(back)) == [secret, secret]


def test_reseal_seals_a_plaintext_store_in_place_once_adopted(tmp_path: Path) -> None:
    """``reseal`` refuses unmarked plaintext without ``adopt_plaintext``; with it, every object and log ends sealed."""
    keyring_path = tmp_path / "keyring.json"
    Keyring.create(keyring_path)
    plain = f"sqlite:///{tmp_path / 'agent.db'}"
    asyncio.run(_touch(plain))
    asyncio.run(_chat(plain, encryption=False))
    code, _, stderr = run("reseal", f"{plain}?keyring={keyring_path}")
    assert code == 2 and "PlaintextStoreError" in stderr and "adopt_plaintext" in stderr
    adopted = f"{plain}?keyring={keyring_path}&adopt_plaintext=true"
    code, stdout, stderr = run("reseal", adopted, "--log-ttl", "3600", "--concurrency", "2")
    assert code == 0, stderr
    assert "1 object sealed" in stdout and "1 history log sealed again, of 1" in stdout, stdout
    assert asyncio.run(_raw_file(plain, "files/a.md"))[:4] == MARKER
    assert all(p[:4] == MARKER for p in asyncio.run(_raw_log(plain))), "a history record is still plaintext"
    assert asyncio.run(_chat(f"{plain}?keyring={keyring_path}")) == ["hello", "hi"]
    code, stdout, _ = run("reseal", f"{plain}?keyring={keyring_path}", "--json")
    assert code == 0 and json.loads(stdout)["sealed"] == json.loads(stdout)["logs_resealed"] == 0


async def _chat(url: str, *, encryption: bool | None = None) -> list[str]:
    """Save the same two messages (a second save stores nothing) and return the session's texts."""
    options: dict[str, Any] = {} if encryption is None else {"encryption": encryption}
    async with open_stores(url, **options) as stores:
        history = stores.history_provider()
        await history.save_messages("chat", [Message("user", ["hello"]), Message("assistant", ["hi"])])
        return [m.text for m in await history.get_messages("chat")]


async def _raw_log(url: str) -> list[bytes]:
    async with open_stores(url, encryption=False) as stores:
        (log,) = await stores.log_driver().list_logs("")
        return await stores.log_driver().read(log.key)


async def _raw_file(url: str, key: str) -> bytes:
    async with open_stores(url, encryption=False) as stores:
        stored = await stores.object_driver().get(key)
        assert stored is not None
        return stored.data


def test_rekey_data_keys_then_reseal_then_forget_a_namespace(tmp_path: Path) -> None:
    """A new data key per scope, the objects sealed again under it, then one namespace erased, from the command line."""
    keyring_path = tmp_path / "keyring.json"
    Keyring.create(keyring_path)
    plain = f"sqlite:///{tmp_path / 'agent.db'}"
    url = f"{plain}?keyring={keyring_path}"

    async def write() -> None:
        async with open_stores(url) as stores:
            await stores.tenant("acme").file_store().write("a.md", "tenant")
            for namespace in ("support", "billing"):
                await stores.history_provider(namespace=namespace).save_messages("chat", [Message("user", ["x"])])

    async def read(namespace: str) -> list[str]:
        async with open_stores(url) as stores:
            return [m.text for m in await stores.history_provider(namespace=namespace).get_messages("chat")]

    asyncio.run(write())
    code, stdout, stderr = run("rekey", url, "--data-keys", "--json")
    assert code == 0, stderr
    rotated = json.loads(stdout)
    assert (rotated["scopes"], rotated["rotated"]) == (4, 3)  # the root, visited, has no data key yet
    code, stdout, stderr = run("rekey", url, "--data-keys", "--older-than", str(rotated["older_than"]), "--json")
    assert code == 0 and json.loads(stdout)["rotated"] == 0, stderr  # an interrupted run finished: nothing left
    code, stdout, stderr = run("rekey", url, "--data-keys", "--namespace", "support")
    assert code == 0 and "a new data key in 1 scope of 1" in stdout, stderr
    code, stdout, stderr = run("reseal", url, "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["resealed"] == 1 and report["logs_resealed"] == 2, report  # the file, both namespaces' logs
    assert asyncio.run(read("support")) == ["x"]
    code, stdout, stderr = run("forget", plain, "--namespace", "support", "--json")  # no keyring needed
    assert code == 0, stderr
    assert json.loads(stdout) == {"url": plain, "namespace": "support", "deleted": 1}
    assert asyncio.run(read("support")) == [] and asyncio.run(read("billing")) == ["x"]
    for args, message in (
        (("forget", plain), "--tenant TENANT, or --namespace"),
        (("forget", plain, "--tenant", "acme", "--namespace", "support"), "not both"),
        (("rekey", url, "--tenant", "acme"), "go with --data-keys"),
    ):
        code, _, stderr = run(*args)
        assert code == 2 and message in stderr, (args, stderr)
