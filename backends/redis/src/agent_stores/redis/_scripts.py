"""The Lua scripts of the Redis backend: every multi-step operation is one of these, one round trip.

Key layout (``P`` is the store's key prefix, ``N`` a shard number, ``K`` a core key)::

    {PlogN}m:K   list    the log's payloads, oldest first
    {PlogN}d:K   list    the log's identity digests, parallel to m
    {PlogN}v:K   string  the log's epoch: random, drawn when the log is created
    {PlogN}index    zset (all scores 0)  every log key K of the shard, in byte order
    {PlogN}expiry   zset (score: expiry, ms since the epoch)  logs with a TTL
    {PlogN}sessions hash K -> session id
    {PobjN}o:K   hash    an object: field d (data) and v (version)
    {PobjN}index    zset (all scores 0)  every object key K of the shard

Every key a script touches carries the same ``{hash tag}``, so each script runs on one cluster
slot (no ``CROSSSLOT``). A log's version is ``<epoch>:<length>``: it changes on every append,
and a log deleted or expired and written again gets a new random epoch, so a writer holding an
old version always conflicts. Every script reads each key it will write *before* writing any,
so a key of the wrong type (``WRONGTYPE``) aborts the script with nothing changed.

The scripts never compare strings with ``<`` (Lua's comparison follows the server's locale):
ordering is ``ZRANGEBYLEX``'s, plain byte order, which is code-point order for UTF-8.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "LOG_APPEND",
    "LOG_DELETE",
    "LOG_LIST",
    "LOG_PURGE",
    "LOG_TAIL",
    "OBJECT_DELETE",
    "OBJECT_FIND",
    "OBJECT_LIST",
    "OBJECT_PUT",
]

# Milliseconds since the epoch by the server's clock; effects replication (default since
# Redis 5, the only mode since 7) lets a script write after reading the clock.
_NOW = """
if redis.replicate_commands then redis.replicate_commands() end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

# Drop index entries of logs whose TTL has passed and whose keys Redis really removed; returns
# how many. An expiry entry whose log still exists (written again since) is corrected instead:
# moved to the log's current expiry, or dropped when the log no longer has one. The log's epoch
# key shares the index's hash tag (the index key minus its "index" suffix), so this stays on
# one cluster slot.
_PURGE = """
local function purge(index, expiry, sessions)
  local removed = 0
  local now = now_ms()
  local tag = string.sub(index, 1, -6)
  while true do
    -- every entry examined leaves the range (removed, or moved past now), so this terminates
    local due = redis.call('ZRANGEBYSCORE', expiry, '-inf', now, 'LIMIT', 0, 500)
    if #due == 0 then return removed end
    local gone = {}
    for _, member in ipairs(due) do
      local left = redis.call('PTTL', tag .. 'v:' .. member)
      if left == -2 then
        gone[#gone + 1] = member
      elseif left == -1 then
        redis.call('ZREM', expiry, member)
      else
        redis.call('ZADD', expiry, now + math.max(left, 1), member)
      end
    end
    if #gone > 0 then
      redis.call('ZREM', index, unpack(gone))
      redis.call('ZREM', expiry, unpack(gone))
      redis.call('HDEL', sessions, unpack(gone))
      removed = removed + #gone
    end
  end
end
"""

#: KEYS: m (the log's payload list; every other key of the log and its shard is derived from
#: it: the hash tag up to the first ``}``, then the log key after ``m:``). ARGV: expected version
#: ('' = absent), ttl in ms ('' = none); when the expected version is '', the new epoch and the
#: session id; then n digests, then n payloads. Returns the new length (an integer: the caller
#: knows the epoch, the one it expected or the one it sent) or, on a conflict, {current
#: version}. A steady append to an existing log without a TTL carries one key and two short
#: arguments besides the records and runs five commands (GET, LLEN, PTTL, RPUSH, RPUSH);
#: creating a log also indexes it. The derived keys share the hash tag of the declared one, so
#: the script stays on one cluster slot.
LOG_APPEND: Final = (
    _NOW
    + """
local m = KEYS[1]
local close = string.find(m, '}', 1, true)
local tag = string.sub(m, 1, close)
local member = string.sub(m, close + 3)
local d, v = tag .. 'd:' .. member, tag .. 'v:' .. member
local expected, ttl = ARGV[1], ARGV[2]
local first = 3
if expected == '' then first = 5 end
local n = (#ARGV - first + 1) / 2
local epoch = redis.call('GET', v)
local length = redis.call('LLEN', m)
local current = ''
if epoch then current = epoch .. ':' .. length end
if current ~= expected then return {current} end
local created = not epoch
-- The shard's keys are named only when this append touches them (a TTL, a TTL dropped, or a
-- new log): a steady append derives two keys, not five.
local index, expiry, sessions
if ttl ~= '' or created or redis.call('PTTL', v) > 0 then
  index, expiry, sessions = tag .. 'index', tag .. 'expiry', tag .. 'sessions'
end
-- A log that had a TTL and is now written without one: its expiry must go. A log created
-- without one drops whatever expiry entry an expired earlier incarnation left behind.
local had_ttl = not created and ttl == '' and expiry ~= nil
if ttl ~= '' or had_ttl or created then redis.call('ZSCORE', expiry, member) end
if created then
  redis.call('ZSCORE', index, member)
  redis.call('HGET', sessions, member)
  length = 0
  redis.call('DEL', m, d)
  redis.call('SET', v, ARGV[3])
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
  redis.call('HSET', sessions, member, ARGV[4])
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

#: KEYS: index, expiry, sessions. ARGV: ZRANGEBYLEX min, max, limit.
#: Purges expired entries, then returns {key1, session1, key2, session2, ...}.
LOG_LIST: Final = (
    _NOW
    + _PURGE
    + """
purge(KEYS[1], KEYS[2], KEYS[3])
local keys = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
if #keys == 0 then return {} end
local sessions = redis.call('HMGET', KEYS[3], unpack(keys))
local out = {}
for i, key in ipairs(keys) do
  out[#out + 1] = key
  out[#out + 1] = sessions[i] or ''
end
return out
"""
)

#: KEYS: index, expiry, sessions. Returns how many expired logs left the index.
LOG_PURGE: Final = (
    _NOW
    + _PURGE
    + """
return purge(KEYS[1], KEYS[2], KEYS[3])
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

#: KEYS: index. ARGV: prefix, recursive ('1'/'0'), literal ('' = none), ZRANGEBYLEX min, max,
#: object key prefix (the shard's ``{tag}o:``). Returns the object keys under ``prefix`` that
#: are not directory markers (not deeper than one level unless recursive) and, with a literal,
#: whose data contains it ignoring ASCII case or is not plain ASCII. Reads the candidates'
#: objects, which share the index's hash tag (so the script stays on one cluster slot).
OBJECT_FIND: Final = (
    _WALK
    + """
local prefix, recursive, literal, objects = ARGV[1], ARGV[2] == '1', ARGV[3], ARGV[6]
local out = {}
walk(KEYS[1], ARGV[4], ARGV[5], function(key)
  local slash = string.find(key, '/', #prefix + 1, true)
  if slash and not recursive then
    return after_all(string.sub(key, 1, slash))
  end
  if string.byte(key, -1) == 47 then return nil end
  if literal ~= '' then
    local data = redis.call('HGET', objects .. key, 'd')
    if not data then return nil end
    if not string.find(data, '[%z\\128-\\255]') and not string.find(string.lower(data), literal, 1, true) then
      return nil
    end
  end
  out[#out + 1] = key
  return nil
end)
return out
"""
)
