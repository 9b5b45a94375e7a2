"""Enriched batches -> OTLP request bytes for the forwarder.

A batch that came in as an OTLP request is sent on as received: :meth:`Encoder.items`
sets the enrichment attributes of each LLM span at the span's position (cost, price
version, flags, sampling, token method, trace cost, embedding for sampled spans),
applies the destination's text policy (PII redacted by default), leaves the rejected
spans out and serializes the request once — no per-span Python work to re-wrap spans.
The forwarder asks for that on the received request itself when it may
(``in_place``, :mod:`otlp.inplace`: a request of LLM spans only, destinations in text
order); otherwise on a copy (one C-level copy, ~0.6 µs a span), the input untouched.
Spans from the REST doors have no origin and are built here (:mod:`otlp.built`).
Transition spans from the toolchain processor are added under their parent's resource
and scope.

The output is a list of :class:`Item`: the bytes of one or more
``ExportTraceServiceRequest.resource_spans`` fields, so a batch of items is
sent by concatenation — no re-encoding in the sender.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from llm_observe import semconv as sc
from llm_observe.otlp import inplace, policy, walk
from llm_observe.otlp.built import fresh_span, transition_bytes
from llm_observe.otlp.otherredact import enrich_others
from llm_observe.otlp.redact import needs_redaction, redact_span
from llm_observe.otlp.walk import ScopeGroup, Walked
from llm_observe.otlp.wire import (
    InstrumentationScope,
    Request,
    Resource,
    encode_value,
    field_bytes,
    varint,
)
from llm_observe.span import LlmSpan

_TRUE, _FALSE = encode_value(True), encode_value(False)


class Item(NamedTuple):
    """Encoded ``resource_spans`` field(s) holding ``spans`` spans."""

    spans: int
    data: bytes


class Encoder:
    """Turns exporter input into :class:`Item`s. Used from the event loop and from the
    forwarder's one encoding thread (large batches): the caches are plain dicts whose
    single operations are atomic under the GIL; a lost entry is only recomputed."""

    def __init__(self, *, redact_pii: bool = True, max_spans: int = 512,
                 max_bytes: int = 4 * 1024 * 1024, text: str | None = None,
                 spans: str = "all") -> None:
        """``text``: a destination's text policy (:mod:`otlp.policy`; default by
        ``redact_pii``), ``spans``: its span filter."""
        text = text or ("redacted" if redact_pii else "full")
        self.text = text
        self.redact_pii = text == "redacted"
        self.drop_texts = text == "none"
        self.spans = spans
        self.max_spans = max_spans
        self.max_bytes = max_bytes
        self._strings: dict[str, bytes] = {}  # small caches of encoded values: costs,
        self._ints: dict[int, bytes] = {}  # versions and methods repeat across spans
        self._api_groups: dict[str, ScopeGroup] = {}

    # --- public ---------------------------------------------------------------
    def items(self, batch: Sequence[LlmSpan], origin: Walked | None = None, *,
              in_place: bool = False, last: bool = True) -> list[Item]:
        """Items for an enriched batch: its received request (``origin``) as it came in
        plus our attributes, or spans built here; transition spans beside their parents.
        ``in_place``: the caller owns ``origin`` and may have it rewritten
        (:mod:`otlp.inplace`; ``last``: no other destination encodes it after this one)."""
        pairs: list[tuple[ScopeGroup, bytes]] = []
        items = self._received(batch, origin, in_place, last) if origin is not None else []
        groups: dict[tuple[int, int], ScopeGroup] = {}
        for span in batch:
            if self.spans != "all" and not policy.keeps(span, self.spans):
                continue
            position = span.position if origin is not None else None
            if position is None:
                message, group = fresh_span(span), self._api_group(span.service_name)
                self._enrich(message, span)
                pairs.append((group, message.SerializeToString()))
            if span.transition is not None and self.spans == "all":
                if position is not None:
                    assert origin is not None
                    key = (position[0], position[1])
                    group = groups.get(key) or groups.setdefault(key, origin.group(*key))
                pairs.append((group, transition_bytes(span.transition)))
        return items + self.pack(pairs) if pairs else items

    def _received(self, batch: Sequence[LlmSpan], origin: Walked, in_place: bool,
                  last: bool) -> list[Item]:
        """The received request, enriched (in place or on a copy), rejected spans left out."""
        if not origin.n_accepted:
            return []
        removes = bool(origin.bad) or self.spans != "all"
        if in_place and inplace.applies(origin):
            inplace.shape(batch, origin, self.text, self._attributes)
            request = origin.request
            if removes and not last:  # the next destination needs the positions
                request = _copy(request)
            elif removes:  # positions no longer hold: no destination may follow
                origin.shaped = inplace.SPENT
        else:
            request = _copy(origin.request)
            self._enrich_copy(request, batch, origin)
        n = origin.n_accepted
        if removes and self.spans == "all":
            for r, s, i in reversed(origin.bad):
                del request.resource_spans[r].scope_spans[s].spans[i]
        elif removes:  # the kept LLM spans only (a rejected span is in no batch)
            n = policy.filter_spans(request, {span.position for span in batch if span.position
                                              and policy.keeps(span, self.spans)})
            if not n:
                return []
        data: bytes = request.SerializeToString()
        if len(data) <= self.max_bytes:
            return [Item(n, data)]  # a request is its resource_spans fields
        return self.pack((group, span.SerializeToString())
                         for group, members in walk.groups(request) for span in members)

    def _enrich_copy(self, copy: Any, batch: Sequence[LlmSpan], origin: Walked) -> None:
        """Enrichment and text policy on a copy of the received request (others too)."""
        for message, span in inplace.messages(copy, batch):
            self._enrich(message, span)
        if origin.texts or origin.marked:  # agent, tool and chain spans' texts and marks
            enrich_others(copy.resource_spans, origin.texts, origin.marked, self.redact_pii)
        if self.drop_texts:  # before any span is deleted: positions still hold
            policy.drop_other_texts(copy, {span.position for span in batch if span.position})

    def pack(self, pairs: Iterable[tuple[ScopeGroup, bytes]]) -> list[Item]:
        """Group spans by resource+scope (keeping order) and cut into bounded items."""
        by_group: dict[int, tuple[ScopeGroup, list[bytes]]] = {}
        for group, data in pairs:
            entry = by_group.get(id(group))
            if entry is None:
                entry = by_group[id(group)] = (group, [])
            entry[1].append(data)
        items = []
        for group, spans in by_group.values():
            start, size = 0, 0
            for i, data in enumerate(spans):
                if i > start and (i - start >= self.max_spans
                                  or size + len(data) > self.max_bytes):
                    items.append(Item(i - start, resource_spans(group, spans[start:i])))
                    start, size = i, 0
                size += len(data) + 4
            items.append(Item(len(spans) - start, resource_spans(group, spans[start:])))
        return items

    def halves(self, data: bytes) -> list[tuple[bytes, int]] | None:
        """A request's spans as two requests of about half the spans each (bytes, spans);
        None when it holds fewer than two spans."""
        pairs = [(group, span.SerializeToString())
                 for group, members in walk.groups(Request.FromString(data))
                 for span in members]
        if len(pairs) < 2:
            return None
        mid = len(pairs) // 2
        return [(b"".join(item.data for item in self.pack(part)), len(part))
                for part in (pairs[:mid], pairs[mid:])]

    # --- enrichment -----------------------------------------------------------
    def _enrich(self, message: Any, span: LlmSpan) -> None:
        """Our attributes and the text policy on one wire span."""
        self._attributes(message, span)
        if self.redact_pii and needs_redaction(span):
            redact_span(message, span)
        elif self.drop_texts:
            policy.drop_texts(message)

    def _attributes(self, message: Any, span: LlmSpan) -> None:
        """The enrichment attributes of ``span`` (the same for every destination)."""
        a = message.attributes
        if span.cost_usd_micro is not None:
            a[sc.COST_USD_MICRO] = self._int(span.cost_usd_micro)
        if span.price_version:
            a[sc.PRICE_VERSION] = self._string(span.price_version)
        a[sc.PII_DETECTED] = _TRUE if span.pii_detected else _FALSE
        a[sc.INJECTION_ATTEMPT] = _TRUE if span.injection_attempt else _FALSE
        a[sc.IS_SAMPLED] = _TRUE if span.is_sampled else _FALSE
        if span.token_count_method:
            a[sc.TOKEN_COUNT_METHOD] = self._string(span.token_count_method)
            a[sc.PROMPT_TOKENS] = self._int(span.prompt_tokens)
            a[sc.COMPLETION_TOKENS] = self._int(span.completion_tokens)
        if span.trace_cost_usd_micro is not None:
            a[sc.TRACE_COST_USD_MICRO] = self._int(span.trace_cost_usd_micro)
        if span.is_sampled:
            if span.prompt_hash:
                a[sc.PROMPT_HASH] = encode_value(span.prompt_hash)
            if span.embedding:
                a[sc.EMBEDDING] = encode_value([float(x) for x in span.embedding])
        if span.errors:
            a[sc.PROCESSOR_ERRORS] = encode_value(list(span.errors))
        if span.notes:
            a[sc.PROCESSING_NOTES] = encode_value(list(span.notes))

    def _int(self, value: int) -> bytes:
        data = self._ints.get(value)
        if data is None:
            if len(self._ints) >= 4096:
                self._ints.clear()
            data = self._ints[value] = b"\x18" + varint(value)
        return data

    def _string(self, value: str) -> bytes:
        data = self._strings.get(value)
        if data is None:
            if len(self._strings) >= 1024:
                self._strings.clear()
            data = self._strings[value] = encode_value(value)
        return data

    def _api_group(self, service: str) -> ScopeGroup:
        group = self._api_groups.get(service)
        if group is None:
            if len(self._api_groups) >= 1024:
                self._api_groups.clear()
            resource = Resource()
            resource.attributes[sc.SERVICE_NAME] = encode_value(service)
            scope = InstrumentationScope(name=sc.SCOPE_NAME)
            group = self._api_groups[service] = ScopeGroup(
                resource.SerializeToString(), "", scope.SerializeToString(), "")
        return group


# --- wire helpers ----------------------------------------------------------------

def _copy(request: Any) -> Any:
    copy = Request()
    copy.CopyFrom(request)
    return copy


def resource_spans(group: ScopeGroup, spans: list[bytes]) -> bytes:
    """One request-level ``resource_spans`` field holding ``spans`` under ``group``."""
    parts = [field_bytes(1, group.scope)] if group.scope else []
    for data in spans:
        parts.append(b"\x12" + varint(len(data)))
        parts.append(data)
    if group.scope_schema_url:
        parts.append(field_bytes(3, group.scope_schema_url.encode()))
    scope_spans = b"".join(parts)
    body = b"".join((field_bytes(1, group.resource) if group.resource else b"",
                     field_bytes(2, scope_spans),
                     field_bytes(3, group.resource_schema_url.encode())
                     if group.resource_schema_url else b""))
    return field_bytes(1, body)
