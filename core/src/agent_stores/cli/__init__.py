"""The ``agent-stores`` command: check, look inside, migrate and demo agent stores.

Installed with the umbrella package (``pip install "agent-stores[sqlite]"``) or
``pip install "agent-stores-core[cli]"``; run ``agent-stores --help``.
"""

from ._app import app, main

__all__ = ["app", "main"]
