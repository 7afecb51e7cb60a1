"""A fault a real network produces, injected into a boto3 client: the server acts, its answer is lost.

:func:`drop_answers` registers a ``before-send`` hook on one client: a matching request is sent
to the server for real, then the answer is thrown away and botocore sees a read timeout, so it
retries the very same request, as it would after a dropped connection.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botocore.awsrequest import AWSPreparedRequest
from botocore.exceptions import ReadTimeoutError
from botocore.httpsession import URLLib3Session

__all__ = ["drop_answers"]


def drop_answers(
    client: Any, operation: str, *, times: int = 1, when: Callable[[AWSPreparedRequest], bool] | None = None
) -> list[str]:
    """Drop the answers of the next ``times`` ``operation`` requests (matching ``when``) after the server acted.

    Returns the list the hook appends each dropped request's URL to (to assert the fault happened).
    """
    dropped: list[str] = []
    http = URLLib3Session()

    def hook(request: AWSPreparedRequest, **_: Any) -> None:
        if len(dropped) >= times or (when is not None and not when(request)):
            return None
        answer = http.send(request)
        answer.content  # read it fully, then lose it  # noqa: B018
        dropped.append(request.url)
        raise ReadTimeoutError(endpoint_url=request.url)

    client.meta.events.register(f"before-send.s3.{operation}", hook)
    return dropped


def conditional(request: AWSPreparedRequest) -> bool:
    """Whether ``request`` carries ``If-None-Match`` or ``If-Match``."""
    return any(h.lower() in {"if-none-match", "if-match"} for h in request.headers)
