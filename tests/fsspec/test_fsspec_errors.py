"""``translate()`` of the fsspec backend as a table: what each filesystem raises, made as it makes it, and its class.

Local and SFTP failures are ``OSError``s with an errno (paramiko maps SFTP status codes to one,
or raises a bare ``OSError`` for a generic failure); s3fs turns botocore's ``ClientError`` into
an ``OSError`` with the ``ClientError`` as its cause (its own ``translate_boto_error`` is used
here), and lets botocore's connection errors through.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError, ReadTimeoutError
from paramiko.ssh_exception import AuthenticationException, NoValidConnectionsError, SSHException
from s3fs.errors import translate_boto_error  # pyright: ignore[reportMissingTypeStubs]

from agent_stores.core import StoreConflictError, StoreError, StoreNotFoundError, StoreUnavailableError
from agent_stores.fsspec._errors import translate

ENDPOINT = "http://127.0.0.1:8333/bucket/key"


def s3fs_answer(code: str, status: int) -> BaseException:
    """What s3fs raises for an S3 error answer with ``code``."""
    response: dict[str, Any] = {
        "Error": {"Code": code, "Message": "whatever"},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    translated: BaseException = translate_boto_error(ClientError(response, "PutObject"))  # type: ignore[arg-type]
    return translated


def os_error(code: int) -> OSError:
    return OSError(code, errno.errorcode[code], "/srv/stores/k")


TABLE: list[tuple[str, BaseException, type[Exception] | None]] = [
    ("local permission denied", os_error(errno.EACCES), StoreError),
    ("local immutable file", os_error(errno.EPERM), StoreError),
    ("read-only file system", os_error(errno.EROFS), StoreError),
    ("sftp permission denied", OSError(errno.EACCES, "Permission denied"), StoreError),
    ("ssh key refused", AuthenticationException("Authentication failed."), StoreError),
    ("s3 wrong secret", s3fs_answer("SignatureDoesNotMatch", 403), StoreError),
    ("s3 policy denies", s3fs_answer("AccessDenied", 403), StoreError),
    ("s3 bucket absent", s3fs_answer("NoSuchBucket", 404), StoreNotFoundError),
    ("s3 no credentials", NoCredentialsError(), StoreError),
    ("s3 condition failed", s3fs_answer("PreconditionFailed", 412), StoreConflictError),
    ("s3 slow down", s3fs_answer("SlowDown", 503), StoreUnavailableError),
    ("s3 endpoint refused", EndpointConnectionError(endpoint_url=ENDPOINT), StoreUnavailableError),
    ("s3 read timed out", ReadTimeoutError(endpoint_url=ENDPOINT), StoreUnavailableError),
    ("disk fails", os_error(errno.EIO), StoreUnavailableError),
    ("disk full", os_error(errno.ENOSPC), StoreUnavailableError),
    ("connection refused", ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"), StoreUnavailableError),
    ("connection reset", ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"), StoreUnavailableError),
    ("socket timed out", TimeoutError("timed out"), StoreUnavailableError),
    ("host not found", socket.gaierror(socket.EAI_NONAME, "Name or service not known"), StoreUnavailableError),
    (
        "ssh connect refused",
        NoValidConnectionsError({("127.0.0.1", 22): ConnectionRefusedError(errno.ECONNREFUSED, "refused")}),
        StoreUnavailableError,
    ),
    ("ssh session dropped", SSHException("SSH session not active"), StoreUnavailableError),
    ("ssh channel closed", EOFError(), StoreUnavailableError),
    ("ssh socket closed", OSError("Socket is closed"), StoreUnavailableError),
    ("name too long", os_error(errno.ENAMETOOLONG), ValueError),
    ("our own conflict", StoreConflictError("object 'k' exists"), None),
    ("a refused key", ValueError("path outside the root"), None),
    ("a directory in the way", IsADirectoryError(errno.EISDIR, "a directory exists at this path", "k"), None),
    ("a file in the way", NotADirectoryError(errno.ENOTDIR, "a parent of the path is a file", "k/x"), None),
    ("missing file", FileNotFoundError(errno.ENOENT, "No such file or directory", "k"), None),
    ("invalid argument", os_error(errno.EINVAL), None),
    ("s3 malformed request", s3fs_answer("InvalidArgument", 400), None),
    ("a bug", AttributeError("'NoneType' object has no attribute 'read'"), None),
]


@pytest.mark.parametrize(("err", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_translate(
    err: BaseException, expected: type[Exception] | None, check_translation: Callable[..., None]
) -> None:
    where = "FsspecObjectDriver(file:///srv/stores)"
    translated = translate(err, what="put", key="k", where=where)
    check_translation(err, translated, expected, prefix=f"put 'k' on {where}")


def test_s3fs_raises_the_classes_the_table_relies_on() -> None:
    assert type(s3fs_answer("SignatureDoesNotMatch", 403)) is PermissionError
    assert type(s3fs_answer("NoSuchBucket", 404)) is FileNotFoundError
    assert isinstance(s3fs_answer("SlowDown", 503), OSError)
    assert isinstance(os_error(errno.EACCES), PermissionError)
