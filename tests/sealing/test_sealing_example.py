"""examples/encrypted_stores.py (quoted whole in docs/encryption.md) runs and says what the page promises."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_encrypted_stores_example_hides_the_secret_and_forgets(tmp_path: Path) -> None:
    for _ in range(2):  # the second run loads the keyring the first one made
        done = subprocess.run(
            [sys.executable, "-W", "error::Warning", str(ROOT / "examples" / "encrypted_stores.py")],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "alice reads: ['My favourite colour is teal.']",
            "'teal' in the database files: False",
            "opened without the key: SealedStoreError",
            "forget alice: 2 items deleted",
            "alice after forget: []",
        ]
    assert (tmp_path / "keyring.json").stat().st_mode & 0o777 == 0o600
