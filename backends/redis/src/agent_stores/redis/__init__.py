"""agent-stores backend for redis. Not implemented yet: the stores land in their own issue."""

__all__: list[str] = []
