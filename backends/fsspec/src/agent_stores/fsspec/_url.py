"""Store URLs: ``file:///abs/path`` and ``fsspec+<protocol>://...`` to (filesystem, root)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, unquote, urlsplit

import fsspec  # pyright: ignore[reportMissingTypeStubs]
from agent_stores.core import redact_url
from agent_stores.core.urls import check_user_part, parse_bool
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]

__all__ = ["FilesystemSpec", "boolean_options", "parse_url"]


def _option_value(raw: str) -> Any:
    """A query value as fsspec expects it: JSON literals (numbers, booleans, null) decoded, else the text."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    return value if isinstance(value, int | float | bool) or value is None else raw


def _boolean_parameters(functions: Iterable[Callable[..., Any]]) -> frozenset[str]:
    """The parameters of ``functions`` whose default is a ``bool``: the options read as strict booleans."""
    names: set[str] = set()
    for function in functions:
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):  # a builtin without a signature
            continue
        names.update(p.name for p in parameters if isinstance(p.default, bool))
    return frozenset(names)


def boolean_options(fs_class: type[AbstractFileSystem], protocol: str) -> frozenset[str]:
    """The storage options ``fs_class`` takes as booleans: by its constructors' defaults (and paramiko's for SFTP)."""
    functions: list[Callable[..., Any]] = [c.__dict__["__init__"] for c in fs_class.__mro__ if "__init__" in c.__dict__]
    if protocol in _SSH_PROTOCOLS:
        try:
            from paramiko import SSHClient  # pyright: ignore[reportMissingTypeStubs]
        except ImportError:  # pragma: no cover - the sftp extra installs it
            pass
        else:
            functions.append(SSHClient.connect)  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
    return _boolean_parameters(functions)


def parse_url(url: str, **storage_options: Any) -> FilesystemSpec:
    """Return what to create for ``url``: a filesystem of its own (not fsspec's shared instance cache) and a root.

    Nothing is connected here.

    ``file:///abs/path`` (or ``file://localhost/abs/path``) is a local directory;
    ``fsspec+<protocol>://<rest>`` is ``<protocol>://<rest>`` through ``fsspec.url_to_fs``.
    Query parameters become storage options (JSON literals decoded: ``port=22`` is an int);
    an option the filesystem takes as a boolean (:func:`boolean_options`: ``anon``,
    ``use_ssl``, paramiko's ``look_for_keys``...) reads ``1/true/yes/on`` or ``0/false/no/off``
    in any case, also when given as a keyword string. Keyword options win over the query.
    A user name or password holding ``/``, ``?``, ``#`` or ``%``, and an ``@`` in the path,
    must be percent-encoded.

    Raises:
        ValueError: The URL is malformed (the message never quotes its user part), names a
            host for ``file``, has no root path, its protocol is unknown to fsspec, or a
            boolean option has another spelling.
    """
    if not isinstance(url, str) or "://" not in url:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"not an fsspec store URL: {redact_url(url)!r}")
    check_user_part(url, what="fsspec store URL")
    scheme, rest = url.split("://", 1)
    scheme = scheme.lower()
    parts = urlsplit(url)
    if parts.fragment:
        raise ValueError(f"fsspec store URLs take no fragment: {redact_url(url)!r}")
    try:
        query = dict(parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query)))
    except ValueError as err:
        raise ValueError(f"malformed query in {redact_url(url)!r}") from err
    rest = rest.split("?", 1)[0]
    if scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"file URLs take no host (file:///absolute/path): {redact_url(url)!r}")
        path = unquote(parts.path)
        if not path.startswith("/") or path.strip("/") == "":
            raise ValueError(f"file URLs name an absolute directory other than '/' (file:///path): {redact_url(url)!r}")
        protocol_url = f"file://{path}"
    elif scheme.startswith("fsspec+") and scheme != "fsspec+":
        protocol = scheme.split("+", 1)[1]
        if protocol == "fsspec":
            raise ValueError(f"fsspec+fsspec is not a protocol: {redact_url(url)!r}")
        protocol_url = f"{protocol}://{rest}"
    else:
        raise ValueError(f"not an fsspec store URL (file:///path or fsspec+<protocol>://...): {redact_url(url)!r}")
    try:
        protocol = protocol_url.split("://", 1)[0]
        fs_class: type[AbstractFileSystem] = fsspec.get_filesystem_class(protocol)  # pyright: ignore[reportUnknownMemberType]
    except (ValueError, ImportError) as err:
        raise ValueError(f"cannot open a filesystem for {redact_url(url)!r}: {err}") from err
    booleans = boolean_options(fs_class, protocol)
    options = {k: parse_bool(v, option=k) if k in booleans else _option_value(v) for k, v in query.items()}
    options |= {
        k: parse_bool(v, option=k) if k in booleans and isinstance(v, str) else v for k, v in storage_options.items()
    }
    root = str(fs_class._strip_protocol(protocol_url)).rstrip("/")  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType, reportUnknownArgumentType]
    if not root or root.strip("/") == "":
        raise ValueError(f"fsspec store URLs need a root directory below the filesystem's root: {redact_url(url)!r}")
    get_url_options: Any = getattr(fs_class, "_get_kwargs_from_urls")  # noqa: B009 - fsspec's URL parser, per class
    url_options: dict[str, Any] = dict(get_url_options(protocol_url))
    for credential in ("username", "password"):  # fsspec hands them on still percent-encoded
        if isinstance(url_options.get(credential), str):
            url_options[credential] = unquote(url_options[credential])
    kwargs = url_options | options | {"skip_instance_cache": True}
    if protocol in _SSH_PROTOCOLS:
        _bound_every_ssh_wait(kwargs)
    return FilesystemSpec(fs_class, kwargs, root, protocol)


_SSH_PROTOCOLS = frozenset({"sftp", "ssh"})
#: paramiko's waits besides the TCP connect; each takes ``timeout`` unless given (paramiko's own
#: defaults are 15 s for the banner, 30 s for authentication and an hour for opening the channel).
_SSH_WAITS = ("banner_timeout", "auth_timeout", "channel_timeout")


def _bound_every_ssh_wait(kwargs: dict[str, Any]) -> None:
    """With ``timeout`` set, let it bound every wait of an SSH connect too (unless that wait is given).

    A server that accepts the TCP connection and then says nothing (a stopped or overloaded
    sshd) would otherwise hold each reconnect for paramiko's 15 s banner wait whatever
    ``timeout`` says.
    """
    timeout = kwargs.get("timeout")
    if isinstance(timeout, int | float) and not isinstance(timeout, bool) and timeout > 0:
        for wait in _SSH_WAITS:
            kwargs.setdefault(wait, timeout)


class FilesystemSpec(NamedTuple):
    """A filesystem to create on first use: its class, constructor options and the root path on it."""

    fs_class: type[AbstractFileSystem]
    options: dict[str, Any]
    root: str
    protocol: str

    def create(self) -> AbstractFileSystem:
        """Create the filesystem (this may connect, e.g. SFTP): call it off the event loop."""
        return self.fs_class(**self.options)
