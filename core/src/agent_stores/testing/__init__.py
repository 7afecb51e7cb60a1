"""The agent-stores conformance suite: prove any history, file, session, checkpoint or todo store correct.

Subclass a conformance class in a test module, declare what the store can do, and provide one
factory fixture returning a callable that opens a store over the same backing data each time::

    import pytest
    from agent_stores.testing import FileStoreCapabilities, FileStoreConformance

    class TestMyFiles(FileStoreConformance):
        capabilities = FileStoreCapabilities(case_sensitive=True, empty_directories=False)
        divergences = {"test_some_clause": "why this store differs"}  # optional, strict xfail

        @pytest.fixture
        def file_store_factory(self, tmp_path):
            return lambda **options: MyFileStore(tmp_path, **options)

Backends built on the core's adapters also prove their drivers with ``LogDriverConformance``
(fixture ``log_driver_factory``) and ``ObjectDriverConformance`` (fixture
``object_driver_factory``). Every clause runs under the class's ``time_limit`` (60 s), with
pytest-timeout as the hard stop of a clause that never awaits (see ``docs/conformance.md``).
``OutageConformance`` checks what a store does when its server becomes unreachable, through an
``OutageProxy`` the suite cuts (see :mod:`agent_stores.testing.outage`). ``StoreURLConformance``
checks that ``agent-stores check`` never shows a URL's password and that boolean URL options
are strict (see :mod:`agent_stores.testing.urls`).

Installed with ``pip install "agent-stores-core[testing]"``; the pytest plugin is registered
automatically, so no pytest configuration is needed.
"""

import warnings

with warnings.catch_warnings():
    # The core's stores subclass the framework's experimental AgentFileStore and SessionStore,
    # which warns when the subclass is defined: not a notice for a run of the suites.
    warnings.filterwarnings("ignore", message=r"\[(HARNESS|SESSION_STORE)\] ")
    import agent_stores.core  # noqa: F401  # pyright: ignore[reportUnusedImport]

from ._base import ConformanceBase, incompressible, requires, unique_id
from .adversarial import ADVERSARIAL_FRAGMENTS, adversarial_ids, has_separator, pattern_like, refusable, storable
from .checkpoints import (
    OBJECT_CHECKPOINT_CAPABILITIES,
    CheckpointStorageCapabilities,
    CheckpointStorageConformance,
    ObjectCheckpointStorageConformance,
    checkpoint_storage_at,
    corrupt_object_checkpoint,
)
from .clock import FakeClock, eventually, expires_on_the_real_clock
from .declared import CAPABILITY_TYPES, declared
from .files import FileStoreCapabilities, FileStoreConformance
from .history import HistoryCapabilities, HistoryProviderConformance
from .log_driver import OBJECT_LOG_DIVERGENCES, LogDriverCapabilities, LogDriverConformance
from .object_driver import ObjectDriverCapabilities, ObjectDriverConformance
from .outage import OutageCapabilities, OutageConformance, OutageProxy
from .sealing import SealingCapabilities, SealingConformance
from .sessions import SessionStoreCapabilities, SessionStoreConformance, corrupt_object_session
from .todos import (
    OBJECT_TODO_CAPABILITIES,
    ObjectTodoStoreConformance,
    TodoStoreCapabilities,
    TodoStoreConformance,
    corrupt_object_todos,
    todo_store_at,
)
from .urls import StoreURLCapabilities, StoreURLConformance

__all__ = [
    "ADVERSARIAL_FRAGMENTS",
    "CAPABILITY_TYPES",
    "OBJECT_CHECKPOINT_CAPABILITIES",
    "OBJECT_LOG_DIVERGENCES",
    "OBJECT_TODO_CAPABILITIES",
    "CheckpointStorageCapabilities",
    "CheckpointStorageConformance",
    "ConformanceBase",
    "FakeClock",
    "FileStoreCapabilities",
    "FileStoreConformance",
    "HistoryCapabilities",
    "HistoryProviderConformance",
    "LogDriverCapabilities",
    "LogDriverConformance",
    "ObjectCheckpointStorageConformance",
    "ObjectDriverCapabilities",
    "ObjectDriverConformance",
    "ObjectTodoStoreConformance",
    "OutageCapabilities",
    "OutageConformance",
    "OutageProxy",
    "SealingCapabilities",
    "SealingConformance",
    "SessionStoreCapabilities",
    "SessionStoreConformance",
    "StoreURLCapabilities",
    "StoreURLConformance",
    "TodoStoreCapabilities",
    "TodoStoreConformance",
    "adversarial_ids",
    "checkpoint_storage_at",
    "corrupt_object_checkpoint",
    "corrupt_object_session",
    "corrupt_object_todos",
    "declared",
    "eventually",
    "expires_on_the_real_clock",
    "has_separator",
    "incompressible",
    "pattern_like",
    "refusable",
    "requires",
    "storable",
    "todo_store_at",
    "unique_id",
]
