"""Lean object answers on the clients the S3 backend makes: no ``LastModified`` parsed.

botocore parses the ``Last-Modified`` header of every GET and HEAD answer into a ``datetime``
(through dateutil, a noticeable share of a small GET's client CPU); the stores never read it.
:func:`skip_last_modified` registers, on one client's own event hooks, a ``before-parse`` step
that drops that header from the successful answers of ``GetObject`` and ``HeadObject``, so they
carry no ``LastModified``; everything else (``ETag``, ``Metadata``, the body and its checksum
validation) is botocore's as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = ["skip_last_modified"]

#: The operations whose answers lose ``LastModified``: the ones the stores send per object.
_OPERATIONS: Final = ("GetObject", "HeadObject")


def skip_last_modified(client: S3Client) -> None:
    """Make ``client``'s ``GetObject`` and ``HeadObject`` answers carry no ``LastModified``.

    Only for a client the backend made and owns: the hook is the client's own (botocore copies
    the event hooks per client), so no other client of the same session changes. Error answers
    are left whole.
    """
    for operation in _OPERATIONS:
        client.meta.events.register(f"before-parse.s3.{operation}", _drop_last_modified)


def _drop_last_modified(response_dict: dict[str, Any], **_: Any) -> None:
    status = response_dict.get("status_code")
    if not isinstance(status, int) or not 200 <= status < 300:
        return
    headers = response_dict.get("headers")
    if headers is not None and "last-modified" in headers:
        del headers["last-modified"]
