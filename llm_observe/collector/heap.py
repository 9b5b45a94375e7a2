"""The interpreter settings ``serve`` makes once, after start-up and before the doors open.

One function, so ``llm-observe serve`` and the benchmarks that stand for it
(``bench.receiver``'s server, ``bench.receiver_ir``) cannot drift apart:

- **the start-up heap frozen** (``gc.freeze``): everything loaded so far (modules, tables,
  encodings, the word model) lives for the whole run; out of the collector's generations
  it is never rescanned, so a full collection costs a pause in proportion to what was made
  since. Label sets made later are frozen as they come (:mod:`collector.longlived`).
- **the youngest generation sized for requests in flight** (:data:`GEN0_THRESHOLD`
  instead of CPython's 700): a 512-span text request holds ~5,000 GC-tracked objects
  (spans, their lists, findings) until it is answered, so with 700 the collector ran
  ~7 young collections a request, each moving the live batch a generation up, and a
  middle collection every ~1.5 requests re-walked it: 4.5% of the server's CPU
  (``bench.receiver``'s text load, GC callbacks timed in thread CPU time: 85 ms of
  1.86 s). With 20,000 a request's objects are mostly freed by reference counting before
  a collection comes: 0.7-1.2% (4-7 young collections in 4 s), each ~5 ms.
  Cyclic garbage waits for 20,000 net allocations instead of 700: a few MB at most.
- **a 1 ms GIL switch interval** (CPython's is 5 ms): heavy work runs in threads (large
  batches in the CPU thread, renders, embeddings); a thread holding the GIL hands it back
  to the loop after this long, so a request's few GIL hand-offs cost a few ms, not tens
  (``bench.hostile``).
"""

from __future__ import annotations

import gc
import sys

GEN0_THRESHOLD = 20_000
SWITCH_INTERVAL_S = 0.001


def settle_for_serving() -> None:
    """Collect and freeze the start-up heap, size the young generation, set the switch
    interval. Call once, after the pipeline started (processors warmed) and before any
    request; process-wide and not undone."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, middle, old)
    sys.setswitchinterval(SWITCH_INTERVAL_S)
