"""One call, one count: an LLM span that wraps another LLM span is forwarded, not counted.

Two instrumentations often describe one model call: an agent SDK's LLM span (OpenInference's
openai-agents ``generation``/``response`` spans, OpenLLMetry's agents spans, LangChain's
``ChatOpenAI`` span) with the client library's LLM span (OpenInference/OpenLLMetry OpenAI) as
its **direct child**. Counting both doubles tokens and cost.

The rule (docs/attribute-mapping.md, "One call, one count"):

- An LLM span whose direct child is an LLM span is a *wrapper*; the child is the call. The
  innermost span is the one closest to the wire (it saw the provider's answer: the dated
  model, the usage as billed). The model is not compared: the agent SDK names the requested
  model (``gpt-4o``), the client the answering one (``gpt-4o-2024-08-06``), and a router's
  wrapper over fallback attempts should not be counted beside the attempts either.
- Same request: the wrapper gets ``duplicate_of`` = its child's span id.
- Across requests (a child usually ends, and is exported, before its wrapper): every counted
  LLM span leaves two keys in a bounded memory — the hash of its own (trace, span) and
  of its (trace, parent). A later span whose own key is a remembered parent is a wrapper of a
  counted call; a later span whose parent is a remembered counted span is the inner call of
  a counted wrapper (the wrapper came first: ``wrapper_counted``, the ``llm_*`` families
  then hold the wrapper's figures). Either way the later one is not counted, so the call
  counts once whichever order the requests come in. The agent run is not recorded on
  arrival: it counts the inner span of the pair whatever the order (agents/runs.py).
- The memory is per process, two generations of ``max_keys`` keys per map (the older
  generation is dropped when the newer fills): a pair split across requests further apart
  than ~``max_keys`` LLM spans is counted twice. Trace-affine routing keeps a trace on one
  replica; ``serve --workers N`` spreads connections, so with ``LLM_OBSERVE_REDIS_URL`` the
  memory is shared through Redis instead (agents/dedupstore.py), else a pair split across
  two requests that land on two workers is counted twice.

A duplicate is still enriched, scanned, redacted and forwarded; the metrics, the tool-call
chain and the agent run's cost skip it.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterator, Sequence
from typing import Any, Protocol

from llm_observe.span import LlmSpan

DEFAULT_MAX_KEYS = 65_536  # int keys: a few MB at most


def span_keys(batch: Sequence[LlmSpan]) -> list[int]:
    """Each span's key: the hash of (trace id, span id).

    An int, not the 48-character string: remembering 2 x 65k of them costs a fraction of the
    memory and allocation. str hashes are salted per process (PYTHONHASHSEED), so a sender
    cannot aim a collision at another trace's span; a chance collision (2**-64 per pair)
    would skip counting one call.
    """
    return [hash((span.trace_id, span.span_id)) for span in batch]


def parent_keys(batch: Sequence[LlmSpan]) -> list[int | None]:
    """Each span's parent key (None for a root or a self-parenting span)."""
    return [hash((span.trace_id, p)) if (p := span.parent_span_id) and p != span.span_id
            else None for span in batch]


def wrappers(batch: Sequence[LlmSpan], keys: Sequence[int],
             pkeys: Sequence[int | None]) -> dict[int, str]:
    """span key -> direct LLM child's span id, for the wrappers of one batch
    (``keys[i]`` / ``pkeys[i]``: ``batch[i]``'s key / parent key)."""
    if set(pkeys).isdisjoint(keys):  # the usual batch: no LLM span under another
        return {}
    return {k: batch[i].span_id for k, i in wrapped(keys, pkeys).items()}


def wrapped(keys: Sequence[Hashable], pkeys: Sequence[Hashable | None]) -> dict[Any, int]:
    """key -> index of its direct LLM child, for the wrappers among LLM spans ``keys``
    (``pkeys[i]``: the parent key of ``keys[i]``; agents/runs.py applies the same rule to
    a run's calls).

    A wrapper is an LLM span with an LLM child. A cycle of parent ids (A under B under A:
    broken or hostile input) has no innermost span: the walk breaks it at the span where it
    closes, which is counted. Each span is walked once: O(n) for any shape.
    """
    child: dict[Any, int] = {}  # parent key -> index of an LLM child
    for i, pkey in enumerate(pkeys):
        if pkey is not None:
            child.setdefault(pkey, i)
    out: dict[Any, int] = {}
    done: set[Any] = set()
    for start in keys:
        if start in done or start not in child:
            continue
        path: dict[Any, None] = {}  # insertion-ordered: the walk from start
        at: Any = start
        while at is not None and at not in done and at not in path:
            path[at] = None
            inner = child.get(at)
            at = keys[inner] if inner is not None else None
        closes = at if at is not None and at in path else None
        done.update(path)
        for k in path:
            if k != closes and k in child:
                out[k] = child[k]
    return out


class WrapperMemory:
    """Marks wrapper LLM spans in batches (``mark``). Thread-safe: the pipeline may run the
    stage on the loop or in its worker thread.

    Two generations of two maps (counted spans' keys; counted spans' parent keys -> their
    id): when the newer counted map reaches ``max_keys`` at the start of a batch both
    rotate, so at most ``2 * (max_keys + batch)`` keys of each are held.
    """

    blocking = False

    def __init__(self, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._counted: dict[int, None] = {}  # keys of counted LLM spans
        self._old_counted: dict[int, None] = {}
        self._parents: dict[int, str] = {}  # parent key -> id of its counted LLM child
        self._old_parents: dict[int, str] = {}
        self._lock = threading.Lock()
        self.duplicates = 0  # spans marked duplicate_of
        self.wrapper_counted = 0  # of those, inner spans whose wrapper had been counted

    def __len__(self) -> int:
        """Keys held (both maps, both generations)."""
        return (len(self._counted) + len(self._old_counted) + len(self._parents)
                + len(self._old_parents))

    def mark(self, batch: Sequence[LlmSpan]) -> None:
        """Set ``duplicate_of`` (the counted span's id) on every span of ``batch`` that is not
        the counted one of its call; remember the counted ones. Never raises on odd ids."""
        keys = span_keys(batch)
        pkeys = parent_keys(batch)
        inner = wrappers(batch, keys, pkeys)
        with self._lock:
            if len(self._counted) >= self.max_keys or len(self._parents) >= self.max_keys:
                self._old_counted, self._counted = self._counted, {}
                self._old_parents, self._parents = self._parents, {}
            counted, old_counted = self._counted, self._old_counted
            parents, old_parents = self._parents, self._old_parents
            for span, key, pkey in zip(batch, keys, pkeys, strict=True):
                dup = (inner.get(key) if inner else None) or parents.get(key) \
                    or old_parents.get(key)
                if dup is None and pkey is not None and (pkey in counted or pkey in old_counted):
                    dup = span.parent_span_id  # the wrapper came first and was counted
                    self.wrapper_counted += 1
                if dup is not None:
                    span.duplicate_of = dup
                    self.duplicates += 1
                    continue
                counted[key] = None
                if pkey is not None:
                    parents[pkey] = span.span_id


class Memory(Protocol):
    """What :class:`DedupProcessor` needs: :class:`WrapperMemory`, or the Redis-shared
    memory of agents/dedupstore.py."""

    blocking: bool  # True: mark does a network round trip (the pipeline's worker thread)

    @property
    def duplicates(self) -> int: ...

    @property
    def wrapper_counted(self) -> int: ...

    def mark(self, batch: Sequence[LlmSpan]) -> None: ...


class DedupProcessor:
    """Pipeline stage: marks the wrappers before anything counts (first in the chain).

    Also a registry collector (duck-typed, read at scrape time):
    ``llm_observe_dedup_duplicates_total`` (LLM spans not counted: another span counts the
    call) and ``llm_observe_dedup_wrapper_counted_total`` (of those, inner spans that came
    after their wrapper had been counted: the ``llm_*`` families hold the wrapper's figures
    for that call, the agent run the inner's; docs/attribute-mapping.md)."""

    name = "dedup"

    def __init__(self, memory: Memory | None = None) -> None:
        self.memory: Memory = memory or WrapperMemory()
        self.blocking = self.memory.blocking

    def process(self, batch: list[LlmSpan]) -> None:
        self.memory.mark(batch)

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily

        yield CounterMetricFamily(
            "llm_observe_dedup_duplicates", "LLM spans not counted in llm_* because another "
            "span of the same call is (one call, one count)", value=self.memory.duplicates)
        yield CounterMetricFamily(
            "llm_observe_dedup_wrapper_counted", "Calls whose wrapper LLM span was counted "
            "in llm_* because it arrived before its inner span (the agent run counts the "
            "inner one)", value=self.memory.wrapper_counted)
