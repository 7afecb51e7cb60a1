"""The owned client's tuned connections: less client CPU per command, the same bytes and safety as redis-py's.

:func:`tune` changes two things in the connections a pool creates:

- the check before every command that a pooled connection holds no unread reply and was not
  closed by the server answers from what the connection already received (as redis-py 8 does)
  instead of reading with a zero timeout (redis-py 7 with hiredis: a timer, a cancelled read
  and one more turn of the event loop per command);
- commands are packed by hiredis (as redis-py's synchronous client does) where its bytes are
  redis-py's own, by redis-py's packer everywhere else.

Both rest on redis-py internals (``_AsyncHiredisParser`` and the attributes it sets) and on
``asyncio.StreamReader._buffer``: :mod:`._tuning` imports this module only on the redis-py
releases it is tested on.
"""

from __future__ import annotations

from typing import Any, Final, cast

import hiredis

from redis._parsers import _AsyncHiredisParser  # pyright: ignore[reportPrivateUsage]
from redis.asyncio import ConnectionPool, RedisCluster
from redis.asyncio.connection import (
    AbstractConnection,
    Connection,
    DefaultParser,
    SSLConnection,
)

__all__ = ["PollingHiredisParser", "tune", "tune_cluster"]


class PollingHiredisParser(_AsyncHiredisParser):
    """redis-py's hiredis parser, checking a pooled connection for unread data without waiting.

    Before every command, redis-py 7's pool asks the parser whether the connection it hands
    out holds unread data or was closed by the server (either way it reconnects first). The
    hiredis parser answers by reading with a zero timeout: a timer, a cancelled read and one
    more turn of the event loop, about a quarter of a short command's client CPU. This one
    answers from what the connection already holds: hiredis's buffer, the stream's buffer and
    its end of file. That is the answer redis-py 8 gives, and the one redis-py 7's own
    pure-Python parser gives (which looks at less: its buffer and the end of file). redis-py 8
    no longer calls this method, so there it changes nothing.
    """

    async def can_read_destructive(self) -> bool:
        """Whether the connection holds unread data or is closed, from what it has already received."""
        stream, reader = self._stream, self._reader
        pending = getattr(stream, "_buffer", None)  # asyncio.StreamReader's received, unread bytes
        if not self._connected or stream is None or reader is None or not isinstance(pending, bytearray):
            return await super().can_read_destructive()
        return bool(pending) or stream.at_eof() or bool(reader.has_data())


class _HiredisPacking(AbstractConnection):
    """Packs commands with hiredis (as redis-py's synchronous client does), not redis-py's Python packer.

    Only commands whose arguments are all ``str``, ``bytes`` or ``int``, on a connection that
    encodes text as strict UTF-8: there both packers produce the same bytes. Anything else
    (floats, memoryviews, a multi-word command name, another encoding) takes redis-py's packer.
    """

    def pack_command(self, *args: Any) -> list[bytes]:
        """The command's bytes in the Redis protocol."""
        first = args[0] if args else None
        encoder = self.encoder
        if (
            isinstance(first, str)
            and first.isalnum()
            and encoder.encoding == "utf-8"
            and encoder.encoding_errors == "strict"
            and _PLAIN_ARGUMENTS.issuperset(map(type, args))
        ):
            return [cast(bytes, hiredis.pack_command(args))]  # pyright: ignore[reportUnknownMemberType]
        return super().pack_command(*args)


_PLAIN_ARGUMENTS: Final = frozenset({str, bytes, int})


class _TCPConnection(_HiredisPacking, Connection):
    pass


class _TLSConnection(_HiredisPacking, SSLConnection):
    pass


_PACKING: Final[dict[type[AbstractConnection], type[AbstractConnection]]] = {
    Connection: _TCPConnection,
    SSLConnection: _TLSConnection,
}


def tune(pool: ConnectionPool) -> None:
    """Make the connections ``pool`` creates cheaper per command, with the same bytes on the wire.

    They use :class:`PollingHiredisParser` and pack commands with hiredis; a connection or
    parser class other than redis-py's own is kept. Needs hiredis (``redis[hiredis]``).
    """
    kwargs = cast(dict[str, Any], pool.connection_kwargs)  # pyright: ignore[reportUnknownMemberType]
    if kwargs.get("parser_class", DefaultParser) is _AsyncHiredisParser:
        kwargs["parser_class"] = PollingHiredisParser
    pool.connection_class = _PACKING.get(pool.connection_class, pool.connection_class)


def tune_cluster(client: RedisCluster) -> None:
    """Make the connections a cluster client opens to its nodes pack commands with hiredis.

    The client's nodes are built from its connection options, those it knows now and those it
    discovers later alike; a connection class other than redis-py's own is kept. (A cluster
    node's connections are not checked for unread data before each command: the parser stays
    redis-py's.)
    """
    kwargs = client.connection_kwargs
    tuned = _PACKING.get(kwargs.get("connection_class", Connection))
    if tuned is None:
        return
    kwargs["connection_class"] = tuned
    manager = client.nodes_manager.connection_kwargs
    if manager is not kwargs:
        manager["connection_class"] = tuned
    for node in client.get_nodes():
        if node.connection_class in _PACKING:
            node.connection_class = tuned  # pyright: ignore[reportAttributeAccessIssue]
