"""The Lua scripts of agents/runstore.py: each runs atomically in Redis, one call per batch
(add), per idle trace (sweep) or per run (claim). The hash ``llm-observe:run:<trace>``
holds ``l:<span>`` the parent id, ``m:<span>`` a member (``c|t,start,end,cost``),
``o:<span>`` a run span (JSON: kind, name, service, parent, start, end), ``c:<span>`` a
closed run, ``#l`` the spans held, ``#h`` held (an agent, tool or workflow span came),
``#c`` the closed runs. One Redis, not a Cluster: a batch's script touches many keys."""

# The whole batch in one call. KEYS: open set, traces set, then each trace's hash. ARGV:
# now, held ttl, wait ttl, max spans, run room, then per trace: its id, its span count, and
# (kind, span, parent, payload) per span; kind l(ink) c(all) t(ool) a(gent) w(orkflow).
# Returns {dropped, closed runs in the trace} per trace, flat.
ADD = """
local now, max, room = tonumber(ARGV[1]), tonumber(ARGV[4]), tonumber(ARGV[5])
local out, a = {}, 6
for k = 3, #KEYS do
  local h, trace, count = KEYS[k], ARGV[a], tonumber(ARGV[a + 1])
  a = a + 2
  local n = tonumber(redis.call('HGET', h, '#l') or '0')
  local held = redis.call('HEXISTS', h, '#h') == 1
  local dropped = 0
  for i = a, a + 4 * count - 1, 4 do
    local kind, span = ARGV[i], ARGV[i + 1]
    local ok = true
    if redis.call('HEXISTS', h, 'l:' .. span) == 0 then
      local limit = max
      if kind == 'a' or kind == 'w' then limit = max + room end
      if n >= limit then
        ok = false
        if kind ~= 'l' then dropped = dropped + 1 end
      else
        n = n + 1
      end
    end
    if ok then
      redis.call('HSET', h, 'l:' .. span, ARGV[i + 2])
      if kind == 'c' or kind == 't' then
        redis.call('HSET', h, 'm:' .. span, ARGV[i + 3])
        if kind == 't' then held = true end
      elseif kind == 'a' or kind == 'w' then
        if redis.call('HSETNX', h, 'o:' .. span, ARGV[i + 3]) == 1 then
          redis.call('ZADD', KEYS[1], 'NX', now, trace .. ':' .. span)
        end
        held = true
      end
    end
  end
  a = a + 4 * count
  redis.call('HSET', h, '#l', n)
  if held then
    redis.call('HSET', h, '#h', '1')
    redis.call('ZADD', KEYS[2], now, trace)
    redis.call('EXPIRE', h, ARGV[2])
  elseif redis.call('TTL', h) < tonumber(ARGV[3]) then
    redis.call('EXPIRE', h, ARGV[3])
  end
  out[#out + 1] = dropped
  out[#out + 1] = tonumber(redis.call('HGET', h, '#c') or '0')
end
return out
"""

# KEYS: hash, open set. ARGV: "trace:span", span. The trace's fields, or nil: not ours.
CLAIM = """
if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then return nil end
redis.call('HSET', KEYS[1], 'c:' .. ARGV[2], '1')
redis.call('HINCRBY', KEYS[1], '#c', 1)
return redis.call('HGETALL', KEYS[1])
"""

# KEYS: hash, open set, traces set. ARGV: trace. {open runs evicted, fields} or nil.
SWEEP = """
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then return nil end
local all = redis.call('HGETALL', KEYS[1])
local evicted = 0
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'o:' then
    evicted = evicted + redis.call('ZREM', KEYS[2], ARGV[1] .. ':' .. string.sub(all[i], 3))
  end
end
redis.call('DEL', KEYS[1])
return {evicted, all}
"""
