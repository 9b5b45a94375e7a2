"""The received request enriched and redacted in place for the forwarder, not copied.

The request a batch came in as (``Walked.request``) is the receiver's, and once the
forwarder has encoded it nobody reads it again — unless it holds spans that are no LLM
call: the agent-run exporter, after the forwarder, reads their ids and keys
(``agent_runs.links``). So a request of LLM spans only (:func:`applies`) is rewritten in
place, as release 1.8.2 did, instead of copied first (the copy was ~8.6k of the ~56k
instructions a span the re-encode cost); any other request is copied as before.

Several destinations share the one request, each with its text policy. Texts only go one
way — as received, then PII redacted, then removed — so the fan-out encodes the
destinations in :data:`RANK` order (``full``, ``redacted``, ``none``) and each takes the
texts only as far as its own policy, past what the one before it left
(``Walked.shaped``); the enrichment attributes are the same for all and set once. The
bytes of a destination are serialized before the next one rewrites the request, so a
``full`` destination gets the text as received. Leaving spans out (rejected ones, a span
filter) moves the positions the next destination needs: the last encoding of a batch does
it in place, an earlier one on a copy (``Encoder.items``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final

from llm_observe.otlp import policy
from llm_observe.otlp.interpreted import OutOfOrder
from llm_observe.otlp.redact import needs_redaction, redact_span
from llm_observe.otlp.walk import Walked
from llm_observe.span import LlmSpan

RANK: Final = {"full": 0, "redacted": 1, "none": 2}  # how far a policy takes the texts
SPENT: Final = 3  # ``Walked.shaped`` once the last encoding left spans out in place


def applies(origin: Walked) -> bool:
    """Whether ``origin.request`` may be rewritten in place: it holds LLM spans only."""
    return not origin.n_other


def shape(batch: Sequence[LlmSpan], origin: Walked, text: str,
          enrich: Callable[[Any, LlmSpan], None]) -> None:
    """Bring ``origin.request`` to the text policy ``text`` in place: ``enrich`` on each
    LLM span's wire span the first time, then its texts redacted (``redacted``) or removed
    (``none``) unless an earlier destination already did. Raises :class:`OutOfOrder` if
    one took them further than ``text``."""
    rank, done = RANK[text], origin.shaped
    if done > rank:
        raise OutOfOrder(f"the request's texts are already {done}, {text!r} asks for {rank}")
    if done == rank:
        return
    first, redact, drop = done < 0, rank == 1, rank == 2
    for message, span in messages(origin.request, batch):
        if first:
            enrich(message, span)
        if redact:
            if needs_redaction(span):
                redact_span(message, span)
        elif drop:
            policy.drop_texts(message)
    origin.shaped = rank


def messages(request: Any, batch: Sequence[LlmSpan]) -> Iterator[tuple[Any, LlmSpan]]:
    """(wire span, LLM span) of each span of ``batch`` that has a position in ``request``.
    The spans of one resource + scope follow each other: their ``spans`` container is
    looked up once, not three levels deep a span (~7k instructions a span)."""
    resource_spans = request.resource_spans
    at_r = at_s = -1
    container: Any = None
    for span in batch:
        position = span.position
        if position is None:
            continue
        r, s, i = position
        if r != at_r or s != at_s:
            container, at_r, at_s = resource_spans[r].scope_spans[s].spans, r, s
        yield container[i], span
