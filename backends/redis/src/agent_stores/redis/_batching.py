"""``CommandBatcher``: the commands of many concurrent callers to Redis, in pipelines.

A command issued while none is in flight goes alone, as ``execute_command`` sends it: one
agent sees no added latency. A command issued while others are in flight joins every command
issued in the same turn of the event loop, and they go in one non-transactional pipeline
(redis-py's ``Pipeline``; on a cluster, one pipeline per primary, see below): one connection,
one write and one read for all of them, instead of a connection, a write and a read each.
With a hundred agents served by one process this is most of the client's CPU per command.

Each command keeps its own reply and its own server error (``NOSCRIPT``, ``WRONGTYPE``...); a
connection error fails every command of its pipeline after the client's retries, as it would
each command sent alone. Commands are not atomic together and run in issue order.

The deadline: each command sent alone, and each pipeline, has one (the client's retries
included), counted from the moment it is handed to the client to send: the time a command
waits here for its pipeline is not counted, nor the turns of the event loop a busy process takes
to read a reply that has arrived (see :class:`Deadlines`).

On a cluster, a command sent alone goes straight to the primary that owns its key's slot, as
the client's slot map names it (the slot of each ``{hash tag}`` is computed once): redis-py's
routing of a command (its command policies, finding the keys and the slot, twice) costs more
client CPU than the rest of a save. Only a redirect or a failure takes the client's own path:
after a ``MOVED`` or ``ASK`` reply, ``TRYAGAIN``, ``CLUSTERDOWN``, an uncovered slot, or a
connection error or timeout on the node, the command is sent again by the client's
``execute_command``, which follows the redirect, learns the new slot map and retries as it
always does (after ``ASK``, the command goes to the importing node right after an ``ASKING``
on the same connection: redis-py 7.1 may send the two on different connections).

A pipeline on a cluster is grouped the same way: the commands of each primary go as one
pipeline on that node's connection (``ClusterNode.execute_pipeline``), all primaries at once,
and each command's caller gets its reply once its primary's pipeline is read. Those answered
``ASK`` go again as one pipeline per importing node, each after an ``ASKING``; those answered
with another redirect or cluster error, or left unanswered by a failed node, go again one by
one in issue order through ``execute_command``, and once one of them fails for want of its node
the others of that node fail with it. Commands without a key we know the place of take the
client's path from the start (its ``ClusterPipeline`` when several), and so do reads on a
client told to read from replicas (``read_from_replicas``, ``load_balancing_strategy``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable
from typing import Any, Final, cast

from redis import exceptions as redis_errors
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode, PipelineCommand
from redis.exceptions import ConnectionError

from ._deadlines import Deadlines

__all__ = ["CommandBatcher"]

_Batch = list[tuple[tuple[Any, ...], "asyncio.Future[Any]"]]
#: Commands of a batch by their position in it: those a node's pipeline leaves to the client.
_Positioned = list[tuple[int, tuple[Any, ...], "asyncio.Future[Any]"]]
#: Commands of a batch a node's pipeline left unsettled, with the reply that left them so.
_Unsettled = list[tuple[tuple[int, tuple[Any, ...], "asyncio.Future[Any]"], Any]]

#: Failures of a command sent again by the cluster client after which the other commands of its
#: batch for the same node fail with it, rather than each spending the client's retries (and
#: each making it learn the slot map again) on a node that cannot be reached.
_UNREACHABLE: Final = (
    redis_errors.ClusterDownError,
    redis_errors.SlotNotCoveredError,
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    ConnectionResetError,
    TimeoutError,
)
#: Replies and failures after which a command sent straight to a node is sent again by the
#: cluster client, which handles them: the slot moved or is moving, the cluster is reshaping,
#: or the node failed.
_REROUTE: Final = (
    redis_errors.MovedError,
    redis_errors.AskError,
    redis_errors.TryAgainError,
    *_UNREACHABLE,
)
#: A command a node's pipeline left without a reply (it failed before reading it).
_NO_REPLY: Final = object()
#: Commands we send whose key is their first argument (scripts name theirs after the key count).
_KEYED: Final = frozenset({"LRANGE", "LLEN", "HGET", "HMGET"})
#: Hash tags whose slot is kept (a store has two per shard; several stores may share a client).
_MAX_TAGS: Final = 4096


def _importing(cluster: RedisCluster, asked: redis_errors.AskError) -> ClusterNode | None:
    """The node an ``ASK`` reply names (importing the slot), when the client knows it."""
    host, port = cast(tuple[str, int], cast(Any, asked).node_addr)
    return cluster.get_node(host=host, port=port)


class CommandBatcher:
    """Sends commands to one ``redis.asyncio`` client, pipelining those issued concurrently.

    Args:
        client: The client, for a server or a cluster.
        timeout: Deadline in seconds of one command sent alone or one pipeline, from the
            moment it is handed to the client (its retries included), after which its commands
            fail with ``TimeoutError``; ``None``: the client's own timeouts.
        deadlines: Keeps the deadlines: the only ones the commands get (the connection's
            funnel adds none).
    """

    def __init__(
        self, client: Redis | RedisCluster, *, timeout: float | None, deadlines: Deadlines | None = None
    ) -> None:
        self._client = client
        self._timeout = timeout
        self._deadlines = deadlines or Deadlines()
        self._in_flight = 0
        self._queue: _Batch = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._cluster = client if isinstance(client, RedisCluster) else None
        self._slots: dict[str, int] = {}  # hash tag (with its braces) -> slot
        # A client told to read from replicas keeps routing the reads itself.
        replicas = isinstance(client, RedisCluster) and bool(
            client.read_from_replicas or client.load_balancing_strategy
        )
        self._keyed: frozenset[str] = frozenset() if replicas else _KEYED

    async def execute(self, *args: Any) -> Any:
        """Run one command (``args`` as for ``execute_command``) and return its reply."""
        if not self._in_flight and not self._queue:
            self._in_flight += 1
            try:
                if self._cluster is None:
                    call = cast("Awaitable[Any]", self._client.execute_command(*args))  # pyright: ignore[reportUnknownMemberType]
                else:
                    call = self._on_node(self._cluster, args)
                return await (call if self._timeout is None else self._deadlines.run(call, self._timeout))
            finally:
                self._in_flight -= 1
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if not self._queue:
            loop.call_soon(self._flush)
        self._queue.append((args, future))
        return await future

    def _flush(self) -> None:
        batch = [(args, future) for args, future in self._queue if not future.done()]
        self._queue = []
        if batch:
            self._in_flight += len(batch)
            task = asyncio.get_running_loop().create_task(self._send(batch))
            self._tasks.add(task)
            task.add_done_callback(functools.partial(self._sent, batch))

    def _sent(self, batch: _Batch, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._in_flight -= len(batch)
        for _, future in batch:
            if not future.done():  # the pipeline was cancelled (the store closed), perhaps before it started
                future.set_exception(ConnectionError("the pipeline was cancelled: the store is closing"))

    async def _send(self, batch: _Batch) -> None:
        if self._cluster is not None and len(batch) > 1:
            call = self._on_nodes(self._cluster, batch)
            try:
                await (call if self._timeout is None else self._deadlines.run(call, self._timeout))
            except Exception as err:  # the deadline passed: the commands not answered yet fail
                for _, future in batch:
                    if not future.done():
                        future.set_exception(err)
            return
        try:
            if len(batch) == 1:
                call = self._call_alone(batch[0][0])
            else:
                pipeline = self._client.pipeline(transaction=False)
                for args, _ in batch:
                    pipeline.execute_command(*args)  # pyright: ignore[reportUnknownMemberType]
                call = self._execute(pipeline)
            replies = await (call if self._timeout is None else self._deadlines.run(call, self._timeout))
        except Exception as err:  # the connection failed or the deadline passed: every command fails
            for _, future in batch:
                if not future.done():
                    future.set_exception(err)
        else:
            for (_, future), reply in zip(batch, replies, strict=True):
                if not future.done():
                    if isinstance(reply, Exception):
                        future.set_exception(reply)
                    else:
                        future.set_result(reply)

    async def _call_alone(self, args: tuple[Any, ...]) -> list[Any]:
        try:
            if self._cluster is None:
                return [await self._client.execute_command(*args)]  # pyright: ignore[reportUnknownMemberType]
            return [await self._on_node(self._cluster, args)]
        except Exception as err:  # a server error belongs to the command, not the batch
            return [err]

    async def _on_node(self, cluster: RedisCluster, args: tuple[Any, ...]) -> Any:
        """Send one command to the primary owning its key's slot; the client's own path after a redirect or failure."""
        node = self._node(cluster, args)
        if node is not None:
            asked: redis_errors.AskError | None = None
            try:
                return await node.execute_command(*args)
            except redis_errors.MovedError:
                pass  # the client follows it and learns the slot's new owner (MovedError is an AskError)
            except redis_errors.AskError as err:
                asked = err
            except _REROUTE:
                pass  # the client's path follows the redirect, learns the new slot map, retries
            target = None if asked is None else _importing(cluster, asked)
            if target is not None:
                (reply,) = await self._replies_on(target, [args], asking=True)
                if reply is not _NO_REPLY and not isinstance(reply, _REROUTE):
                    if isinstance(reply, Exception):
                        raise reply
                    return reply
        return await cluster.execute_command(*args)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]

    async def _on_nodes(self, cluster: RedisCluster, batch: _Batch) -> None:
        """Send a batch on a cluster: one pipeline per primary, all at once; the client's own path for the rest.

        Each command's future gets its reply or server error as soon as its node's pipeline has
        been read. Commands with no node we know go in redis-py's cluster pipeline (or alone
        through ``execute_command``); those a node answered with a redirect or cluster error,
        or left unanswered because it failed, go again through ``execute_command`` one after
        the other, in issue order, once every pipeline is back. When one of those fails for the
        want of a node (the client's retries spent), the others for the same node fail with it.
        """
        if cluster._initialize:  # pyright: ignore[reportPrivateUsage]
            # the client dropped its connections and map after a failure: it learns the map
            # again first, rather than every command taking its cluster pipeline meanwhile
            await cluster.initialize()
        groups: dict[str, tuple[ClusterNode, _Positioned]] = {}
        others: _Positioned = []
        homes: list[str] = []  # the node each command was sent to ("": the client's routing)
        for position, (args, future) in enumerate(batch):
            node = self._node(cluster, args)
            if node is None:
                others.append((position, args, future))
                homes.append("")
                continue
            homes.append(node.name)
            group = groups.get(node.name)
            if group is None:
                group = groups[node.name] = (node, [])
            group[1].append((position, args, future))
        if others:
            calls = [self._pipeline_on(node, commands) for node, commands in groups.values()]
            calls.append(self._through_client(cluster, others))
            unsettled = [command for commands in await asyncio.gather(*calls) for command in commands]
        elif len(groups) == 1:  # one primary: no task of its own
            node, commands = next(iter(groups.values()))
            unsettled = await self._pipeline_on(node, commands)
        else:
            calls = [self._pipeline_on(node, commands) for node, commands in groups.values()]
            unsettled = [command for commands in await asyncio.gather(*calls) for command in commands]
        left: _Positioned = []
        if unsettled:
            # answered ASK (their slot is migrating and their keys have moved): each after an
            # ASKING on one connection of the node importing the slot, one pipeline per node
            importing: dict[str, tuple[ClusterNode, _Positioned]] = {}
            for entry, result in unsettled:
                target = None
                if isinstance(result, redis_errors.AskError) and not isinstance(result, redis_errors.MovedError):
                    target = _importing(cluster, result)
                if target is None:
                    left.append(entry)
                else:
                    importing.setdefault(target.name, (target, []))[1].append(entry)
            if importing:
                calls = [self._pipeline_on(node, commands, asking=True) for node, commands in importing.values()]
                left += [entry for commands in await asyncio.gather(*calls) for entry, _ in commands]
        left.sort(key=lambda command: command[0])
        unreachable: dict[str, Exception] = {}
        for position, args, future in left:
            if future.done():
                continue
            failure = unreachable.get(homes[position])
            if failure is not None:
                future.set_exception(failure)
                continue
            try:
                reply = await cluster.execute_command(*args)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            except _UNREACHABLE as err:
                unreachable[homes[position]] = err
                future.set_exception(err)
            except Exception as err:  # a server error belongs to the command
                future.set_exception(err)
            else:
                future.set_result(reply)

    @staticmethod
    async def _pipeline_on(node: ClusterNode, commands: _Positioned, *, asking: bool = False) -> _Unsettled:
        """Send ``commands`` to ``node`` in one pipeline; settle those it answered, return the others.

        Returned with their reply: the commands answered with a redirect or a cluster error,
        and those left without a reply (:data:`_NO_REPLY`) by a connection error or timeout on
        the node (sent or not).
        """
        replies = await CommandBatcher._replies_on(node, [args for _, args, _ in commands], asking=asking)
        unsettled: _Unsettled = []
        for entry, reply in zip(commands, replies, strict=True):
            future = entry[2]
            if reply is _NO_REPLY or isinstance(reply, _REROUTE):
                unsettled.append((entry, reply))
            elif future.done():
                continue
            elif isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)
        return unsettled

    @staticmethod
    async def _replies_on(node: ClusterNode, commands: list[tuple[Any, ...]], *, asking: bool = False) -> list[Any]:
        """Send ``commands`` to ``node`` in one pipeline (with ``asking``, each right after an ``ASKING``).

        Returns each command's reply or error, :data:`_NO_REPLY` where the node failed before
        answering it; a failure before anything was sent that is no connection error (such as
        a refusal of the client's options) is the reply of every command.
        """
        pipeline: list[PipelineCommand] = []
        for args in commands:
            if asking:
                pipeline.append(PipelineCommand(len(pipeline), "ASKING"))
            command = PipelineCommand(len(pipeline), *args)
            command.result = _NO_REPLY
            pipeline.append(command)
        failure: Any = _NO_REPLY
        try:
            await node.execute_pipeline(pipeline)
        except _REROUTE:
            pass  # the connection failed while sending: the commands go to the client
        except Exception as err:
            failure = err
        sent = pipeline[1::2] if asking else pipeline
        return [failure if command.result is _NO_REPLY else command.result for command in sent]

    @staticmethod
    async def _through_client(cluster: RedisCluster, commands: _Positioned) -> _Unsettled:
        """Send ``commands`` by the client's own routing (its cluster pipeline when several); settle them all."""
        replies: list[Any]
        try:
            if len(commands) == 1:
                replies = [await cluster.execute_command(*commands[0][1])]  # pyright: ignore[reportUnknownMemberType]
            else:
                pipeline = cluster.pipeline(transaction=False)
                for _, args, _ in commands:
                    pipeline.execute_command(*args)  # pyright: ignore[reportUnknownMemberType]
                replies = await CommandBatcher._execute(pipeline)
        except Exception as err:  # a server error, or the client's retries ran out: these commands fail
            replies = [err] * len(commands)
        for (_, _, future), reply in zip(commands, replies, strict=True):
            if future.done():
                continue
            if isinstance(reply, Exception):
                future.set_exception(reply)
            else:
                future.set_result(reply)
        return []

    def _node(self, cluster: RedisCluster, args: tuple[Any, ...]) -> ClusterNode | None:
        """The primary the client's slot map names for the command's key, or ``None`` (no key we know, no map yet)."""
        name = args[0]
        if name == "EVALSHA" or name == "EVAL":
            if len(args) < 4 or not args[2]:
                return None
            key = args[3]
        elif name in self._keyed:
            key = args[1]
        else:
            return None
        if not isinstance(key, str):
            return None
        end = key.find("}")
        if end < 2 or key[0] != "{":
            return None
        tag = key[: end + 1]
        slot = self._slots.get(tag)
        if slot is None:
            if len(self._slots) >= _MAX_TAGS:
                self._slots.clear()
            slot = self._slots[tag] = cluster.keyslot(tag)
        if cluster._initialize:  # pyright: ignore[reportPrivateUsage]  # the client must learn the map first
            return None
        nodes = cluster.nodes_manager.slots_cache.get(slot)
        return nodes[0] if nodes else None

    @staticmethod
    async def _execute(pipeline: Any) -> list[Any]:
        return cast(list[Any], await pipeline.execute(raise_on_error=False))

    async def aclose(self) -> None:
        """Cancel the pipelines in flight; their commands fail with redis-py's ``ConnectionError``."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
