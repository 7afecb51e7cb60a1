"""agent-stores backend for sqlite. Not implemented yet: the stores land in their own issue."""

__all__: list[str] = []
