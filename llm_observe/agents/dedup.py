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
  LLM span leaves two keys in a bounded memory — its own (trace, span) and its
  (trace, parent). A later span whose own key is a remembered parent is a wrapper of a
  counted call; a later span whose parent is a remembered counted span is the inner call of
  a counted wrapper (the wrapper came first). Either way the later one is not counted, so
  the call counts once whichever order the requests come in.
- The memory is per process, two generations of ``max_keys`` keys each (the older
  generation is dropped when the newer fills): a pair split across requests further apart
  than ~``max_keys`` LLM spans is counted twice. Trace-affine routing keeps a trace on one
  replica; with ``serve --workers N`` a pair split across two requests that land on two
  workers is counted twice (a request holds both in the common case: an SDK's batch
  processor exports a call's spans together).

A duplicate is still enriched, scanned, redacted and forwarded; the metrics, the tool-call
chain and the agent run's cost skip it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from llm_observe.span import LlmSpan

DEFAULT_MAX_KEYS = 65_536  # ~2 x 65k x ~120 B: ~16 MB at most


class _Generations:
    """A bounded map: two generations, the older dropped when the newer fills."""

    __slots__ = ("max_keys", "new", "old")

    def __init__(self, max_keys: int) -> None:
        self.max_keys = max_keys
        self.new: dict[str, str] = {}
        self.old: dict[str, str] = {}

    def get(self, key: str) -> str | None:
        value = self.new.get(key)
        return self.old.get(key) if value is None else value

    def put(self, key: str, value: str) -> None:
        if len(self.new) >= self.max_keys:
            self.old, self.new = self.new, {}
        self.new[key] = value


def wrappers(batch: Sequence[LlmSpan]) -> dict[str, str]:
    """trace+span key -> direct LLM child's span id, for the wrappers of one batch.

    A wrapper is an LLM span with an LLM child. A cycle of parent ids (A under B under A:
    broken or hostile input) has no innermost span: the walk breaks it at the span where it
    closes, which is counted. Each span is walked once: O(n) for any shape.
    """
    child: dict[str, tuple[str, str]] = {}  # trace+parent -> (child's key, child's id)
    for span in batch:
        parent = span.parent_span_id
        if parent and parent != span.span_id:  # self-parenting names no wrapper
            child.setdefault(span.trace_id + parent, (span.trace_id + span.span_id,
                                                      span.span_id))
    if not child:
        return {}
    present = {span.trace_id + span.span_id for span in batch}
    out: dict[str, str] = {}
    done: set[str] = set()
    for start in present:
        if start in done or start not in child:
            continue
        path: dict[str, None] = {}  # insertion-ordered: the walk from start
        key: str | None = start
        while key is not None and key not in done and key not in path:
            path[key] = None
            inner = child.get(key)
            key = inner[0] if inner is not None else None
        closes = key if key is not None and key in path else None
        done.update(path)
        for k in path:
            if k != closes and k in child:
                out[k] = child[k][1]
    return out


class WrapperMemory:
    """Marks wrapper LLM spans in batches (``mark``). Thread-safe: the pipeline may run the
    stage on the loop or in its worker thread."""

    def __init__(self, max_keys: int = DEFAULT_MAX_KEYS) -> None:
        self._counted = _Generations(max_keys)  # trace+span of counted LLM spans
        self._parents = _Generations(max_keys)  # trace+parent -> span id of a counted child
        self._lock = threading.Lock()
        self.duplicates = 0

    def mark(self, batch: Sequence[LlmSpan]) -> None:
        """Set ``duplicate_of`` (the counted span's id) on every span of ``batch`` that is not
        the counted one of its call; remember the counted ones. Never raises on odd ids."""
        inner = wrappers(batch)
        with self._lock:
            counted, parents = self._counted, self._parents
            for span in batch:
                key = span.trace_id + span.span_id
                parent = span.parent_span_id
                pkey = span.trace_id + parent if parent and parent != span.span_id else None
                dup = inner.get(key) if inner else None
                if dup is None:
                    dup = parents.get(key)
                if dup is None and pkey is not None and counted.get(pkey) is not None:
                    dup = parent
                if dup is not None:
                    span.duplicate_of = dup
                    self.duplicates += 1
                    continue
                counted.put(key, "")
                if pkey is not None:
                    parents.put(pkey, span.span_id)


class DedupProcessor:
    """Pipeline stage: marks the wrappers before anything counts (first in the chain)."""

    name = "dedup"
    blocking = False

    def __init__(self, memory: WrapperMemory | None = None) -> None:
        self.memory = memory or WrapperMemory()

    def process(self, batch: list[LlmSpan]) -> None:
        self.memory.mark(batch)
