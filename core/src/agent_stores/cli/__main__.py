"""``python -m agent_stores.cli``: the same as the ``agent-stores`` command."""

from . import main

main()
