"""agent-stores backend for s3. Not implemented yet: the stores land in their own issue."""

__all__: list[str] = []
