"""The MongoDB object driver: one document per key, ``{_id: key, v: version, t: text | b: bytes, a: plain}``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from bson import ObjectId
from pymongo import ASCENDING, ReplaceOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.errors import BulkWriteError

from agent_stores.core import CorruptRecordError, Listing, OrderedPut, StoreConflictError, StoredObject
from agent_stores.core.drivers import check_distinct_keys, prefix_bounds

from ._database import Document, MongoDBDatabase
from ._documents import check_key, key_range, too_large

__all__ = ["MongoDBObjectDriver", "regex_escape"]

# Keys fetched per query while folding a delimited listing.
_LIST_CHUNK: Final = 256
#: The server's code for a write refused by a unique index (here: ``_id``).
_DUPLICATE_KEY: Final = 11000


def regex_escape(text: str) -> str:
    """Escape ``text`` for a MongoDB (PCRE) ``$regex`` so it matches only itself.

    Every ASCII character that is not a letter or digit is backslash-escaped, which PCRE (and
    Python's ``re``) read as the literal character; other characters are literal already.
    """
    return "".join(c if (c.isascii() and c.isalnum()) or not c.isascii() else "\\" + c for c in text)


def _object_doc(key: str, data: bytes, version: str) -> Document:
    """The document of ``data``: text when it is UTF-8 without NUL (``a``: plain ASCII), else bytes.

    Raises:
        ValueError: The document would exceed MongoDB's 16 MiB limit.
    """
    doc: Document = {"_id": key, "v": version}
    text: str | None
    try:
        text = data.decode("utf-8") if b"\x00" not in data else None
    except UnicodeDecodeError:
        text = None
    if text is None:
        doc["b"] = data
        doc["a"] = 0
    else:
        doc["t"] = text
        doc["a"] = 1 if data.isascii() else 0
    if too_large(doc, len(data) + 2 * len(key.encode("utf-8")) + 128):
        raise ValueError(
            f"object {key!r} of {len(data)} bytes exceeds MongoDB's 16 MiB document limit; nothing was written"
        )
    return doc


def _object_data(doc: Document) -> StoredObject:
    version, text, data = doc.get("v"), doc.get("t"), doc.get("b")
    if not isinstance(version, str):
        raise CorruptRecordError(f"object {doc.get('_id')!r} is corrupt: its version is not a string")
    if isinstance(text, str):
        return StoredObject(text.encode("utf-8"), version)
    if isinstance(data, bytes):
        return StoredObject(data, version)
    raise CorruptRecordError(f"object {doc.get('_id')!r} is corrupt: it holds neither text nor bytes")


class MongoDBObjectDriver:
    """A :class:`~agent_stores.core.ObjectDriver` in one collection, one document per key (``_id``).

    Every call is one operation (one round trip) except :meth:`list` with a delimiter, which
    walks the key range in chunks and skips each common prefix with one more range query.
    UTF-8 data without NUL is stored as a string (so file search can filter it with ``$regex``),
    anything else as binary; ``get`` returns the exact bytes either way.

    Args:
        database: The shared database; closed by :meth:`aclose` only when it owns its client.
    """

    def __init__(self, database: MongoDBDatabase) -> None:
        self.database = database

    def telemetry_attributes(self) -> dict[str, str | int]:
        """The database name, for the core's spans (see ``agent_stores.core.telemetry``)."""
        return {"db.namespace": self.database.name}

    def _objects(self) -> AsyncCollection[Document]:
        return self.database.collection("objects")

    async def get(self, key: str) -> StoredObject | None:
        """Return the object, or ``None`` when absent.

        Raises:
            CorruptRecordError: The stored document is not one of ours (named in the message).
        """
        doc = await self.database.run("get object", lambda: self._objects().find_one({"_id": check_key(key)}))
        return None if doc is None else _object_data(doc)

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return :meth:`get` of every key, in order, in one ``$in`` query per 500 keys (listings read many).

        Raises:
            CorruptRecordError: A stored document is not one of ours (named in the message).
        """
        wanted = [check_key(key) for key in keys]
        found: dict[str, StoredObject] = {}

        async def fetch(chunk: list[str]) -> list[Document]:
            return await self._objects().find({"_id": {"$in": chunk}}).to_list()

        for start in range(0, len(wanted), 500):
            docs = await self.database.run("get objects", fetch, list(dict.fromkeys(wanted[start : start + 500])))
            found.update((doc["_id"], _object_data(doc)) for doc in docs)
        return [found.get(key) for key in wanted]

    async def head(self, key: str) -> str | None:
        """Return the object's version, or ``None``."""
        doc = await self.database.run(
            "head object", lambda: self._objects().find_one({"_id": check_key(key)}, {"v": 1})
        )
        if doc is None:
            return None
        version = doc.get("v")
        if not isinstance(version, str):
            raise CorruptRecordError(f"object {key!r} is corrupt: its version is not a string")
        return version

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``key`` (conditionally) in one operation; return the new version.

        Raises:
            StoreConflictError: ``if_absent`` and the key exists, or ``if_version`` is not current.
            ValueError: The document would exceed the 16 MiB limit; nothing was written.
        """
        version = str(ObjectId())
        doc = _object_doc(check_key(key), bytes(data), version)
        objects = self._objects()
        if if_version is not None:
            if if_absent or not isinstance(if_version, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
            result = await self.database.run(
                "compare-and-set object", lambda: objects.replace_one({"_id": key, "v": if_version}, doc)
            )
            if result.matched_count == 0:
                raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        elif if_absent:
            try:
                await self.database.run("create object", lambda: objects.insert_one(doc))
            except StoreConflictError as err:
                raise StoreConflictError(f"object {key!r} exists") from err
        else:
            try:
                await self.database.run("put object", lambda: objects.replace_one({"_id": key}, doc, upsert=True))
            except StoreConflictError:
                # Two upserts of a new key raced and the other inserted first: now it exists, replace it.
                await self.database.run("put object", lambda: objects.replace_one({"_id": key}, doc, upsert=True))
        return version

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Store the items in order in one ordered ``update`` command (one round trip); stop at the first refusal.

        See ``OrderedPutDriver``. Every item is a replacement with ``upsert``, so the whole
        call is one command of the server, which runs its writes one after the other and
        stops at the first that fails. An unconditional item matches its key; an ``if_absent``
        item matches its key *and* its own new version, which no stored object has, so it
        inserts, and the unique ``_id`` refuses it (duplicate key) when the key exists.
        Each write is atomic; a stop leaves the items before some point, never a later one
        without an earlier one. Two racing upserts of one new key (the server may refuse the
        second as a duplicate, as with :meth:`put`) are resolved by writing that item again.

        Raises:
            ValueError: Two items share a key, or an item exceeds the 16 MiB document limit;
                nothing was written.
            StoreConflictError: An item's key exists and it is ``if_absent``; the items before
                it were stored, it and those after it were not.
        """
        check_distinct_keys(items)
        if not items:
            return []
        versions = [str(ObjectId()) for _ in items]
        docs = [_object_doc(check_key(i.key), bytes(i.data), v) for i, v in zip(items, versions, strict=True)]
        requests = [
            ReplaceOne({"_id": doc["_id"], "v": doc["v"]} if item.if_absent else {"_id": doc["_id"]}, doc, upsert=True)
            for item, doc in zip(items, docs, strict=True)
        ]
        objects = self._objects()

        async def write() -> int | None:
            """Run the command; return the position of the write a duplicate key stopped (``None``: none)."""
            try:
                await objects.bulk_write(requests, ordered=True)
            except BulkWriteError as err:
                details: Any = err.details
                failed: list[Any] = details.get("writeErrors") or []
                if (
                    len(failed) == 1
                    and failed[0].get("code") == _DUPLICATE_KEY
                    and not details.get("writeConcernErrors")
                ):
                    return int(failed[0]["index"])
                raise
            return None

        stopped = await self.database.run("put objects in order", write)
        if stopped is None:
            return versions
        item = items[stopped]
        if item.if_absent:
            raise StoreConflictError(f"object {item.key!r} exists")
        # Another upsert created this key meanwhile: now it exists, write it again, then the rest.
        version = await self.put(item.key, item.data)
        return [*versions[:stopped], version, *await self.put_in_order(items[stopped + 1 :])]

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``key``; return whether it existed.

        Raises:
            StoreConflictError: ``if_version`` is given and is not the current version.
        """
        condition: Document = {"_id": check_key(key)}
        if if_version is not None:
            if not isinstance(if_version, str):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
            condition["v"] = if_version
        result = await self.database.run("delete object", lambda: self._objects().delete_one(condition))
        if if_version is not None and result.deleted_count == 0:
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        return result.deleted_count > 0

    async def _keys(self, condition: Document, limit: int) -> list[str]:
        objects = self._objects()

        async def fetch() -> list[Document]:
            return await objects.find({"_id": condition}, {"_id": 1}).sort("_id", ASCENDING).limit(limit).to_list()

        return [doc["_id"] for doc in await self.database.run("list objects", fetch)]

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List keys under ``prefix`` in code-point order, paged by ``after`` / ``limit``.

        A range query on ``_id`` (binary UTF-8 order without a collation). With a delimiter the
        range is read in chunks; each common prefix found is reported once and skipped with a
        new range query starting after it, so the cost grows with the entries listed, never
        with the keys folded away.
        """
        if limit is not None and limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        check_key(prefix)
        if not delimiter:
            keys = await self._keys(key_range(prefix, after=after), 0 if limit is None else limit)
            return Listing(keys, [])
        keys: list[str] = []
        prefixes: list[str] = []
        start: str | None = None  # the next query starts at this key (inclusive) ...
        cursor = after  # ... or strictly after this one
        while True:
            chunk = await self._keys(key_range(prefix, after=cursor, start=start), _LIST_CHUNK)
            skipping: str | None = None  # the common prefix whose keys are being passed over
            for key in chunk:
                if skipping is not None and key.startswith(skipping):
                    continue
                rest = key[len(prefix) :]
                cut = rest.find(delimiter)
                if cut < 0:
                    skipping = None
                    if after is None or key > after:
                        keys.append(key)
                else:
                    skipping = prefix + rest[: cut + len(delimiter)]
                    if after is None or skipping > after:
                        prefixes.append(skipping)
                if limit is not None and len(keys) + len(prefixes) >= limit:
                    return Listing(keys, prefixes)
            if len(chunk) < _LIST_CHUNK:
                return Listing(keys, prefixes)
            if skipping is None:
                start, cursor = None, chunk[-1]
                continue
            # Every remaining key of the common prefix sorts below ``high``: resume there.
            _, high = prefix_bounds(skipping)
            if high is None:
                return Listing(keys, prefixes)
            start, cursor = high, None

    async def find_keys(self, prefix: str, *, recursive: bool, literal: str | None = None) -> list[str]:
        """Return the keys under ``prefix`` that are not directory markers (search candidates), by key.

        One query: the key range, an anchored escaped ``$regex`` on the key (without
        ``recursive``: no ``/`` after the prefix) and, with ``literal`` (a lowercase plain ASCII
        string), a case-insensitive ``$regex`` on the text of documents that are plain ASCII;
        every other document is kept (a superset, never a miss).
        """
        condition: Document = {"_id": key_range(prefix)}
        if "\x00" not in prefix:  # a server regex cannot hold NUL; the range and the check below suffice
            condition["_id"]["$regex"] = "^" + regex_escape(prefix) + ("[^/]*$" if not recursive else "")
        if literal is not None:
            condition["$or"] = [{"a": {"$ne": 1}}, {"t": {"$regex": regex_escape(literal), "$options": "i"}}]
        objects = self._objects()

        async def fetch() -> list[Document]:
            return await objects.find(condition, {"_id": 1}).sort("_id", ASCENDING).to_list()

        keys = [doc["_id"] for doc in await self.database.run("find objects", fetch)]
        return [k for k in keys if not k.endswith("/") and (recursive or "/" not in k[len(prefix) :])]

    async def aclose(self) -> None:
        """Close the database if it owns its client."""
        await self.database.aclose()
