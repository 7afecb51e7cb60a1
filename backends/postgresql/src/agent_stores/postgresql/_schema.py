"""The numbered migrations of the PostgreSQL stores' tables, applied in order, each once.

History: one row per log in ``agent_stores_logs`` (its length, its version, its expiry) and one
row per message in ``agent_stores_messages``, numbered 1.. within its log. A version is a random
63-bit integer drawn by the writer for every append, so a writer holding an old version
conflicts even after the log was deleted and written again. A conditional append is one call
of ``agent_stores_append`` (one statement, so atomic): it checks the expected version on the
locked log row, starts an expired log over, and inserts the batch.

Objects (files and session snapshots): one row per key; the version comes from a sequence, so
no version is ever handed out twice. A key is found by the SHA-256 of its bytes (the primary
key, so a key of any length fits) and listed through an index of its first characters.

Every key column is ``COLLATE "C"``: keys compare and sort in code-point order whatever the
database's collation.
"""

from __future__ import annotations

from typing import Final

from ._errors import CONFLICT_SQLSTATE

__all__ = ["ADVISORY_LOCK", "MIGRATIONS", "ORDER_PREFIX", "SCHEMA_VERSION"]

#: The advisory lock migrations are applied under (``pg_advisory_xact_lock``): "agentsto".
ADVISORY_LOCK: Final = 7018690069354738799

_APPEND_FUNCTION = f"""
CREATE OR REPLACE FUNCTION agent_stores_append(
    p_key text, p_session_id text, p_expected bigint, p_version bigint,
    p_expires_at double precision, p_now double precision, p_digests text[], p_payloads bytea[]
) RETURNS bigint LANGUAGE plpgsql AS $body$
DECLARE
    v_log bigint;
    v_before bigint;
    v_count integer := cardinality(p_payloads);
BEGIN
    IF p_expected IS NULL THEN
        -- No live log expected: an expired one is started over, and a live one is a conflict.
        DELETE FROM agent_stores_logs WHERE key = p_key AND expires_at <= p_now;
        INSERT INTO agent_stores_logs (key, session_id, length, version, expires_at)
        VALUES (p_key, p_session_id, v_count, p_version, p_expires_at)
        ON CONFLICT (key) DO NOTHING
        RETURNING log_id INTO v_log;
        v_before := 0;
    ELSE
        UPDATE agent_stores_logs
        SET length = length + v_count, version = p_version, expires_at = p_expires_at
        WHERE key = p_key AND version = p_expected AND (expires_at IS NULL OR expires_at > p_now)
        RETURNING log_id, length - v_count INTO v_log, v_before;
    END IF;
    IF v_log IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = '{CONFLICT_SQLSTATE}',
            MESSAGE = 'agent-stores: the log is not at the expected version';
    END IF;
    INSERT INTO agent_stores_messages (log_id, seq, digest, payload)
    SELECT v_log, v_before + r.n, r.digest, r.payload
    FROM unnest(p_digests, p_payloads) WITH ORDINALITY AS r(digest, payload, n);
    RETURN v_before + v_count;
END
$body$"""

# A save in one round trip (see ``agent_stores.core.unseen``): lock the live log's row, read the
# digests of its last records, and append only when the conditions the core states hold; or,
# with no live log and no staged one beside it, start it. Otherwise nothing is written and the
# tail read is returned. Output: whether it appended, then the length, version and digests
# (oldest first) of the log's end.
_APPEND_UNSEEN_FUNCTION = """
CREATE OR REPLACE FUNCTION agent_stores_append_unseen(
    p_key text, p_session_id text, p_version bigint, p_expires_at double precision, p_now double precision,
    p_window integer, p_stop text[], p_staging text, p_read integer, p_digests text[], p_payloads bytea[],
    OUT o_appended boolean, OUT o_length bigint, OUT o_version bigint, OUT o_digests text[]
) LANGUAGE plpgsql AS $body$
DECLARE
    v_log bigint;
    v_tail text[];
    v_n integer;
    v_count integer := cardinality(p_payloads);
BEGIN
    o_appended := false;
    SELECT l.log_id, l.length, l.version INTO v_log, o_length, o_version
    FROM agent_stores_logs AS l
    WHERE l.key = p_key AND (l.expires_at IS NULL OR l.expires_at > p_now)
    FOR UPDATE;
    IF v_log IS NULL THEN
        o_length := 0;
        o_version := NULL;
        o_digests := '{}';
        IF EXISTS (
            SELECT 1 FROM agent_stores_logs AS s
            WHERE s.key = p_staging AND s.length > 0 AND (s.expires_at IS NULL OR s.expires_at > p_now)
        ) THEN
            RETURN;
        END IF;
        DELETE FROM agent_stores_logs AS l WHERE l.key = p_key AND l.expires_at <= p_now;
        INSERT INTO agent_stores_logs AS l (key, session_id, length, version, expires_at)
        VALUES (p_key, p_session_id, v_count, p_version, p_expires_at)
        ON CONFLICT (key) DO NOTHING
        RETURNING l.log_id INTO v_log;
        IF v_log IS NULL THEN
            RETURN;  -- another writer created it meanwhile: the caller reads it the usual way
        END IF;
        INSERT INTO agent_stores_messages (log_id, seq, digest, payload)
        SELECT v_log, r.n, r.digest, r.payload
        FROM unnest(p_digests, p_payloads) WITH ORDINALITY AS r(digest, payload, n);
        o_appended := true;
        o_length := v_count;
        o_version := p_version;
        o_digests := p_digests;
        RETURN;
    END IF;
    SELECT coalesce(array_agg(t.digest ORDER BY t.seq), '{}') INTO v_tail
    FROM (
        SELECT m.digest, m.seq FROM agent_stores_messages AS m
        WHERE m.log_id = v_log ORDER BY m.seq DESC LIMIT greatest(p_read, p_window, 1)
    ) AS t;
    v_n := cardinality(v_tail);
    o_digests := v_tail[greatest(1, v_n - p_read + 1):v_n];
    IF v_tail[greatest(1, v_n - greatest(p_window, 1) + 1):v_n] && p_stop
        OR (p_window > 0 AND v_tail[greatest(1, v_n - p_window + 1):v_n] && p_digests) THEN
        RETURN;
    END IF;
    UPDATE agent_stores_logs AS l
    SET length = l.length + v_count, version = p_version, expires_at = p_expires_at
    WHERE l.log_id = v_log;
    INSERT INTO agent_stores_messages (log_id, seq, digest, payload)
    SELECT v_log, o_length + r.n, r.digest, r.payload
    FROM unnest(p_digests, p_payloads) WITH ORDINALITY AS r(digest, payload, n);
    o_appended := true;
    o_length := o_length + v_count;
    o_version := p_version;
    o_digests := o_digests || p_digests;
END
$body$"""

# A load: the payloads of a live log, newest first, at most ``p_last`` of them (NULL: all). A
# function, not a statement, so the server plans its query once per connection and keeps the
# plan, which a pooler-safe statement (no server-side prepared statements) cannot do.
_READ_FUNCTION = """
CREATE OR REPLACE FUNCTION agent_stores_read(p_key text, p_now double precision, p_last bigint)
RETURNS SETOF bytea LANGUAGE plpgsql STABLE AS $body$
BEGIN
    RETURN QUERY
    SELECT m.payload FROM agent_stores_messages AS m
    WHERE m.log_id = (
        SELECT l.log_id FROM agent_stores_logs AS l
        WHERE l.key = p_key AND (l.expires_at IS NULL OR l.expires_at > p_now)
    )
    ORDER BY m.seq DESC
    LIMIT p_last;
END
$body$"""

#: Characters of an object's key its ordering index holds: at most 4 bytes each in UTF-8, so an
#: index entry stays under the 2,704 bytes a btree entry may take, whatever the key's length.
ORDER_PREFIX: Final = 600

# Object keys of any length (migration 4). The primary key moves from ``key`` to the SHA-256 of
# its UTF-8 bytes (a generated column, so the server keeps it), and a btree on the key's first
# ``ORDER_PREFIX`` characters serves ranges and order: for keys compared in code-point order
# (``COLLATE "C"``), ordering by (that prefix, key) is ordering by key, and a range of keys lies
# within the same range of prefixes.
_KEY_DIGEST_FUNCTION = """
CREATE OR REPLACE FUNCTION agent_stores_key_digest(p_key text) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $body$ SELECT sha256(convert_to(p_key, 'UTF8')) $body$"""

# A log's messages go with it (migration 5): a trigger after each deleted log row, instead of the
# messages' foreign key. The key's check on every inserted message was redundant (the append
# functions insert only under the log row they hold locked) and cost a lookup per message; the
# trigger deletes as the key's cascade did. Its query runs in a volatile function, so it sees
# the messages of an append that committed while the delete waited for the log's row.
_DROP_MESSAGES_FUNCTION = """
CREATE OR REPLACE FUNCTION agent_stores_drop_messages() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    DELETE FROM agent_stores_messages WHERE log_id = OLD.log_id;
    RETURN NULL;
END
$body$"""

#: (number, name, statements): applied in order, each in the transaction that records it.
MIGRATIONS: Final[tuple[tuple[int, str, tuple[str, ...]], ...]] = (
    (
        1,
        "history logs and messages, objects",
        (
            """CREATE TABLE agent_stores_logs (
                log_id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                key text COLLATE "C" NOT NULL UNIQUE,
                session_id text NOT NULL,
                length bigint NOT NULL,
                version bigint NOT NULL,
                expires_at double precision
            )""",
            "CREATE INDEX agent_stores_logs_expiry ON agent_stores_logs (expires_at) WHERE expires_at IS NOT NULL",
            """CREATE TABLE agent_stores_messages (
                log_id bigint NOT NULL REFERENCES agent_stores_logs (log_id) ON DELETE CASCADE,
                seq bigint NOT NULL,
                digest text NOT NULL,
                payload bytea NOT NULL,
                PRIMARY KEY (log_id, seq)
            )""",
            _APPEND_FUNCTION,
            "CREATE SEQUENCE agent_stores_object_versions AS bigint",
            """CREATE TABLE agent_stores_objects (
                key text COLLATE "C" PRIMARY KEY,
                data bytea NOT NULL,
                version bigint NOT NULL DEFAULT nextval('agent_stores_object_versions'),
                plain boolean NOT NULL
            )""",
        ),
    ),
    (2, "a save in one round trip", (_APPEND_UNSEEN_FUNCTION,)),
    (3, "a load planned once per connection", (_READ_FUNCTION,)),
    (
        4,
        "object keys of any length",
        (
            _KEY_DIGEST_FUNCTION,
            "ALTER TABLE agent_stores_objects ADD COLUMN key_digest bytea "
            "GENERATED ALWAYS AS (agent_stores_key_digest(key)) STORED NOT NULL",
            "ALTER TABLE agent_stores_objects DROP CONSTRAINT agent_stores_objects_pkey",
            "ALTER TABLE agent_stores_objects ALTER COLUMN key SET NOT NULL",
            "ALTER TABLE agent_stores_objects ADD CONSTRAINT agent_stores_objects_pkey PRIMARY KEY (key_digest)",
            f"CREATE INDEX agent_stores_objects_order ON agent_stores_objects (left(key, {ORDER_PREFIX}))",
        ),
    ),
    (
        5,
        "a log's messages deleted by a trigger, not checked by a foreign key",
        (
            _DROP_MESSAGES_FUNCTION,
            "CREATE TRIGGER agent_stores_logs_drop_messages AFTER DELETE ON agent_stores_logs "
            "FOR EACH ROW EXECUTE FUNCTION agent_stores_drop_messages()",
            "ALTER TABLE agent_stores_messages DROP CONSTRAINT agent_stores_messages_log_id_fkey",
        ),
    ),
)

#: The schema version this release writes: the number of the last migration.
SCHEMA_VERSION: Final = MIGRATIONS[-1][0]
