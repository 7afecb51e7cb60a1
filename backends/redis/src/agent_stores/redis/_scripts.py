"""The Lua scripts of the Redis backend: every multi-step write is one of these, one round trip.

Key layout (``P`` is the store's key prefix, ``N`` a shard number, ``K`` a core key)::

    {PlogN}m:K   list    the log's payloads, oldest first
    {PlogN}d:K   list    the log's identity digests, parallel to m
    {PlogN}v:K   string  the log's epoch: random, drawn when the log is created
    {PlogN}index    zset (all scores 0)  every log key K of the shard, in byte order
    {PlogN}expiry   zset (score: expiry, ms since the epoch)  logs with a TTL
    {PlogN}sessions hash K -> session id
    {PobjN}o:K   hash    an object: field d (data) and v (version)
    {PobjN}index    zset (all scores 0)  every object key K of the shard

Every key a script touches is one of its ``KEYS`` (a script never builds a key name), and the
keys of one call carry the same ``{hash tag}``, so each script runs on one cluster slot (no
``CROSSSLOT``). Where the keys depend on what a first read finds (the logs due for expiry, the
objects a search reads), the driver runs a first script and passes them to a second.

A log's version is ``<epoch>:<length>``: it changes on every append, and a log deleted or
expired and written again gets a new random epoch, so a writer holding an old version always
conflicts. Every script reads each key it will write *before* writing any, so a key of the
wrong type (``WRONGTYPE``) aborts the script with nothing changed.

The scripts never compare strings with ``<`` (Lua's comparison follows the server's locale):
ordering is ``ZRANGEBYLEX``'s, plain byte order, which is code-point order for UTF-8.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "LOG_APPEND",
    "LOG_DELETE",
    "LOG_DELETE_AT",
    "LOG_DUE",
    "LOG_LIST",
    "LOG_PURGE",
    "LOG_TAIL",
    "OBJECT_DELETE",
    "OBJECT_FIND",
    "OBJECT_LIST",
    "OBJECT_MATCH",
    "OBJECT_PUT",
    "OBJECT_PUT_IN_ORDER",
]

# Effects replication (default since Redis 5, the only mode since 7) lets a script write after
# reading the clock; a script calls this before its first write.
_REPLICATE_EFFECTS = "if redis.replicate_commands then redis.replicate_commands() end\n"

# Milliseconds since the epoch by the server's clock, in a script that replicates its effects.
_NOW = (
    _REPLICATE_EFFECTS
    + """
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""
)

# The logs of a shard whose expiry entry is due, the 500 oldest.
_DUE = """
local function due(expiry)
  return redis.call('ZRANGEBYSCORE', expiry, '-inf', now_ms(), 'LIMIT', 0, 500)
end
"""

#: KEYS: m, d, v, then the shard's index, expiry and sessions when the append may touch them
#: (it creates the log, sets a TTL, or drops the TTL the log had). ARGV: expected version (''
#: = absent), ttl in ms ('' = none); with the shard's keys, the log key; when the expected
#: version is '', the new epoch and the session id; then n digests, then n payloads. Returns
#: the new length (an integer: the caller knows the epoch, the one it expected or the one it
#: sent); on a conflict, {current version}; {current version, 1} when the append needs the
#: shard's keys it was not given (the log had a TTL to drop), nothing changed. A steady append to an
#: existing log without a TTL (up to 1000 records) declares three keys and runs five commands
#: (GET, LLEN, PTTL, RPUSH, RPUSH) and nothing else: it neither reads the clock nor needs
#: effects replication, so it takes the short path at the top (about the least a versioned,
#: de-duplicated append costs in a script: ``benchmarks/results/redis-append/probe.md``);
#: every other append takes the general path, which repeats the two reads.
LOG_APPEND: Final = (
    """
local m, d, v, index = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local expected, ttl = ARGV[1], ARGV[2]
if not index and ttl == '' and #ARGV <= 2002 then
  local epoch = redis.call('GET', v)
  local length = redis.call('LLEN', m)
  local current = ''
  if epoch then current = epoch .. ':' .. length end
  if current ~= expected then return {current} end
  if epoch and redis.call('PTTL', v) < 0 then
    -- The digests go first: a digest list of the wrong type (WRONGTYPE) aborts the script
    -- with nothing changed.
    local n = (#ARGV - 2) / 2
    redis.call('RPUSH', d, unpack(ARGV, 3, 2 + n))
    redis.call('RPUSH', m, unpack(ARGV, 3 + n, 2 + 2 * n))
    return length + n
  end
end
"""
    + _NOW
    + """
local expiry, sessions = KEYS[5], KEYS[6]
local member
local first = 3
if index then
  member = ARGV[3]
  first = 4
end
if expected == '' then first = first + 2 end
local n = (#ARGV - first + 1) / 2
local epoch = redis.call('GET', v)
local length = redis.call('LLEN', m)
local current = ''
if epoch then current = epoch .. ':' .. length end
if current ~= expected then return {current} end
local created = not epoch
-- A log that had a TTL and is now written without one: its expiry must go. A log created
-- without one drops whatever expiry entry an expired earlier incarnation left behind.
local had_ttl = not created and ttl == '' and redis.call('PTTL', v) > 0
if (ttl ~= '' or had_ttl or created) and not index then return {current, 1} end
if ttl ~= '' or had_ttl or created then redis.call('ZSCORE', expiry, member) end
if created then
  redis.call('ZSCORE', index, member)
  redis.call('HGET', sessions, member)
  length = 0
  redis.call('DEL', m, d)
  redis.call('SET', v, ARGV[first - 2])
end
-- The digests go first: on an existing log that RPUSH is the first write, so a digest list of
-- the wrong type (WRONGTYPE) aborts the script with nothing changed.
for i = 0, n - 1, 1000 do
  local last = math.min(i + 999, n - 1)
  redis.call('RPUSH', d, unpack(ARGV, first + i, first + last))
  redis.call('RPUSH', m, unpack(ARGV, first + n + i, first + n + last))
end
if ttl ~= '' then
  local ms = tonumber(ttl)
  redis.call('PEXPIRE', m, ms)
  redis.call('PEXPIRE', d, ms)
  redis.call('PEXPIRE', v, ms)
  redis.call('ZADD', expiry, now_ms() + ms, member)
elseif had_ttl then
  redis.call('PERSIST', m)
  redis.call('PERSIST', d)
  redis.call('PERSIST', v)
  redis.call('ZREM', expiry, member)
elseif created then
  redis.call('ZREM', expiry, member)
end
if created then
  redis.call('ZADD', index, 0, member)
  redis.call('HSET', sessions, member, ARGV[first - 1])
end
return length + n
"""
)

#: KEYS: m, d, v. ARGV: how many digests. Returns {epoch or '', length, digests}.
LOG_TAIL: Final = """
local epoch = redis.call('GET', KEYS[3])
local length = redis.call('LLEN', KEYS[1])
local count = tonumber(ARGV[1])
local digests = {}
if epoch and count > 0 then digests = redis.call('LRANGE', KEYS[2], -count, -1) end
return {epoch or '', length, digests}
"""

#: KEYS: m, d, v, index, expiry, sessions. ARGV: log key. Returns 1 when the log existed.
LOG_DELETE: Final = """
local existed = redis.call('GET', KEYS[3])
redis.call('LLEN', KEYS[1])
redis.call('LLEN', KEYS[2])
redis.call('ZSCORE', KEYS[4], ARGV[1])
redis.call('ZSCORE', KEYS[5], ARGV[1])
redis.call('HGET', KEYS[6], ARGV[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
if existed then return 1 end
return 0
"""

#: KEYS: m, d, v, index, expiry, sessions. ARGV: log key, expected version. Deletes the log as
#: :data:`LOG_DELETE` does, only while it is at the expected version; returns 1 when it did.
LOG_DELETE_AT: Final = """
local epoch = redis.call('GET', KEYS[3])
local length = redis.call('LLEN', KEYS[1])
if not epoch or (epoch .. ':' .. length) ~= ARGV[2] then return 0 end
redis.call('LLEN', KEYS[2])
redis.call('ZSCORE', KEYS[4], ARGV[1])
redis.call('ZSCORE', KEYS[5], ARGV[1])
redis.call('HGET', KEYS[6], ARGV[1])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
return 1
"""

#: KEYS: index, expiry, sessions. ARGV: ZRANGEBYLEX min, max, limit. Returns {{}, {key1,
#: session1, key2, session2, ...}}; or, while logs of the shard are due for expiry, {{due log
#: keys}, {}}: the driver passes them to :data:`LOG_PURGE` and asks again.
LOG_LIST: Final = (
    _NOW
    + _DUE
    + """
local pending = due(KEYS[2])
if #pending > 0 then return {pending, {}} end
local keys = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
if #keys == 0 then return {{}, {}} end
local sessions = redis.call('HMGET', KEYS[3], unpack(keys))
local out = {}
for i, key in ipairs(keys) do
  out[#out + 1] = key
  out[#out + 1] = sessions[i] or ''
end
return {{}, out}
"""
)

#: KEYS: expiry. Returns the keys of the shard's logs due for expiry (the 500 oldest).
LOG_DUE: Final = (
    _NOW
    + _DUE
    + """
return due(KEYS[1])
"""
)

#: KEYS: index, expiry, sessions, then the epoch key (v) of each log named in ARGV. ARGV: log
#: keys due for expiry (from :data:`LOG_DUE` or :data:`LOG_LIST`). Drops from the index the logs
#: whose keys Redis really removed and returns how many; the expiry entry of a log that still
#: exists (written again since) is corrected instead: moved to the log's current expiry, or
#: dropped when the log no longer has one.
LOG_PURGE: Final = (
    _NOW
    + """
if #ARGV == 0 then return 0 end
redis.call('ZSCORE', KEYS[1], ARGV[1])
redis.call('ZSCORE', KEYS[2], ARGV[1])
redis.call('HGET', KEYS[3], ARGV[1])
local now = now_ms()
local gone = {}
for i, member in ipairs(ARGV) do
  local left = redis.call('PTTL', KEYS[3 + i])
  if left == -2 then
    gone[#gone + 1] = member
  elseif left == -1 then
    redis.call('ZREM', KEYS[2], member)
  else
    redis.call('ZADD', KEYS[2], now + math.max(left, 1), member)
  end
end
if #gone > 0 then
  redis.call('ZREM', KEYS[1], unpack(gone))
  redis.call('ZREM', KEYS[2], unpack(gone))
  redis.call('HDEL', KEYS[3], unpack(gone))
end
return #gone
"""
)

#: KEYS: object, index. ARGV: data, new version, mode ('' | 'absent' | 'version'), expected
#: version, object key. Returns 1 when written, 0 when the condition failed.
OBJECT_PUT: Final = """
local current = redis.call('HGET', KEYS[1], 'v')
redis.call('ZSCORE', KEYS[2], ARGV[5])
if ARGV[3] == 'absent' and current then return 0 end
if ARGV[3] == 'version' and current ~= ARGV[4] then return 0 end
redis.call('HSET', KEYS[1], 'd', ARGV[1], 'v', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[5])
return 1
"""

#: KEYS: each item's object and its shard's index. ARGV: each item's data, new version, '1' when
#: it is written only if absent (else ''), and object key. Every object and index is read first
#: (a key of another type fails the script before anything is written); then the items are
#: written in order up to the first one that must be absent and exists. Returns how many were
#: written (all of them: their number).
OBJECT_PUT_IN_ORDER: Final = """
local n = #KEYS / 2
local exists = {}
for i = 1, n do
  exists[i] = redis.call('HGET', KEYS[2 * i - 1], 'v')
  redis.call('ZSCORE', KEYS[2 * i], ARGV[4 * i])
end
for i = 1, n do
  if ARGV[4 * i - 1] == '1' and exists[i] then return i - 1 end
  redis.call('HSET', KEYS[2 * i - 1], 'd', ARGV[4 * i - 3], 'v', ARGV[4 * i - 2])
  redis.call('ZADD', KEYS[2 * i], 0, ARGV[4 * i])
end
return n
"""

#: KEYS: objects (hashes) of one shard. ARGV: none. Returns {data1, version1, data2, ...}, nil
#: for an absent object's fields (``HMGET`` of each, in KEYS order).
OBJECT_GET_MANY: Final = """
local out = {}
for i, key in ipairs(KEYS) do
  local fields = redis.call('HMGET', key, 'd', 'v')
  out[2 * i - 1] = fields[1]
  out[2 * i] = fields[2]
end
return out
"""

#: KEYS: object, index. ARGV: object key, expected version ('' = any).
#: Returns 1 deleted, 0 absent, -1 not at the expected version.
OBJECT_DELETE: Final = """
local current = redis.call('HGET', KEYS[1], 'v')
redis.call('ZSCORE', KEYS[2], ARGV[1])
if ARGV[2] ~= '' and current ~= ARGV[2] then return -1 end
redis.call('ZREM', KEYS[2], ARGV[1])
if not current then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""

# Walks one shard's index from a ZRANGEBYLEX bound, calling visit(key) for each key; visit
# returns a new lower bound to jump to (skipping a folded prefix), false to stop, or nil.
_WALK = """
local function after_all(prefix)
  return '[' .. string.sub(prefix, 1, -2) .. string.char(string.byte(prefix, -1) + 1)
end
local function walk(index, low, high, visit)
  while true do
    local keys = redis.call('ZRANGEBYLEX', index, low, high, 'LIMIT', 0, 256)
    if #keys == 0 then return end
    local jumped = false
    for _, key in ipairs(keys) do
      local nxt = visit(key)
      if nxt == false then return end
      if nxt then
        low = nxt
        jumped = true
        break
      end
    end
    if not jumped then
      if #keys < 256 then return end
      low = '(' .. keys[#keys]
    end
  end
end
"""

#: KEYS: index. ARGV: prefix, delimiter ('' = none), limit (0 = none), ZRANGEBYLEX min, max.
#: Returns {entry1, folded1, ...}: keys (folded 0) and common prefixes (folded 1) in order.
OBJECT_LIST: Final = (
    _WALK
    + """
local prefix, delimiter, limit = ARGV[1], ARGV[2], tonumber(ARGV[3])
local out = {}
local count = 0
walk(KEYS[1], ARGV[4], ARGV[5], function(key)
  if limit > 0 and count >= limit then return false end
  count = count + 1
  if delimiter ~= '' then
    local cut = string.find(key, delimiter, #prefix + 1, true)
    if cut then
      local folded = string.sub(key, 1, cut + #delimiter - 1)
      out[#out + 1] = folded
      out[#out + 1] = 1
      return after_all(folded)
    end
  end
  out[#out + 1] = key
  out[#out + 1] = 0
  return nil
end)
return out
"""
)

#: KEYS: index. ARGV: prefix, recursive ('1'/'0'), ZRANGEBYLEX min, max. Returns the object
#: keys under ``prefix`` that are not directory markers (not deeper than one level unless
#: recursive).
OBJECT_FIND: Final = (
    _WALK
    + """
local prefix, recursive = ARGV[1], ARGV[2] == '1'
local out = {}
walk(KEYS[1], ARGV[3], ARGV[4], function(key)
  local slash = string.find(key, '/', #prefix + 1, true)
  if slash and not recursive then
    return after_all(string.sub(key, 1, slash))
  end
  if string.byte(key, -1) == 47 then return nil end
  out[#out + 1] = key
  return nil
end)
return out
"""
)

#: KEYS: objects (hashes). ARGV: a literal (lowercase ASCII). Returns the 1-based positions in
#: KEYS of the objects that exist and whose data contains the literal ignoring ASCII case or is
#: not plain ASCII (a superset of the matches, never a miss).
OBJECT_MATCH: Final = """
local literal = ARGV[1]
local out = {}
for i, key in ipairs(KEYS) do
  local data = redis.call('HGET', key, 'd')
  if data and (string.find(data, '[%z\\128-\\255]') or string.find(string.lower(data), literal, 1, true)) then
    out[#out + 1] = i
  end
end
return out
"""
