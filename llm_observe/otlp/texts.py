"""Prompt and completion text in every dialect: read it, lay it out, write a copy back.

A *family* is one convention's way of carrying text on one side (our
``llm_observe.prompt``, OpenLLMetry's indexed ``gen_ai.prompt.{i}.*``, OpenInference's
``llm.input_messages.{i}.message.*``, GenAI semconv's JSON ``gen_ai.input.messages``,
``gen_ai.system_instructions``, tool definitions, content events ...; the catalogue is
:mod:`otlp.textkeys`). A span's text on a side is the *layout* of every family present,
in rank order, pieces joined by newlines: the first family's pieces all (the
conversation, as the span's text always was), then each piece of a later family that
is not already in the text. A piece that is (OpenLIT's event repeats its attribute,
OpenInference's JSON body repeats its messages) is a *copy*: it keeps the offset of
its original, so the scanner reads it once and the redactor rewrites both alike.

The scanner reads the whole layout, so every text the collector forwards is scanned
(see :mod:`otlp.redact` for what happens beyond the scanned bound).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from llm_observe.otlp import textjson, textroles
from llm_observe.otlp.interpreted import Candidates
from llm_observe.otlp.keysets import KeySetCache
from llm_observe.otlp.textkeys import (
    COMPLETION,
    CONTENT_EVENTS,
    EVENT_JSON,
    EVENT_METADATA,
    EVENTS,
    EVENTS_BY_SIDE,
    MIME_KEYS,
    PROMPT,
    Parse,
    Which,
    classify,
)
from llm_observe.otlp.textvalues import FALLBACK, Source, add_source, plain_value, write_back
from llm_observe.otlp.wire import decode_value
from llm_observe.semconv import PROMPT_ROLES

Segment = textroles.Segment

__all__ = ["COMPLETION", "PROMPT", "SEPARATOR", "Candidates", "Family", "Layout", "Segment",
           "Source", "Which", "candidates", "layout", "read", "read_roles", "write_back"]

SEPARATOR = "\n"


@dataclass(frozen=True, slots=True)
class Family:
    """The keys of one rank present on a span (``attr``), or its content events (``event``)."""

    kind: Literal["attr", "event"]
    which: Which
    rank: int
    keys: tuple[tuple[str, Parse], ...] = ()  # "attr": (key, how to read it), layout order


def candidates(attrs: Any, which: Which) -> Candidates:
    """The families of ``which`` the attribute keys hold (content events always may).

    Once per attribute key set (the dialect plan caches it), so the per-span read only
    visits keys that are present. No cap on message indexes.
    """
    found = []
    roles = False
    for key in attrs:
        text_key = classify(key)
        if text_key is not None and text_key.which == which:
            found.append((text_key.rank, text_key.order, key, text_key.parse))
            roles = roles or textroles.key_has_roles(key, which)
        elif key == PROMPT_ROLES and which == PROMPT:
            roles = True
    found.sort()
    groups: dict[int, list[tuple[str, Parse]]] = {}
    for rank, _, key, parse in found:
        groups.setdefault(rank, []).append((key, parse))
    families = [Family("attr", which, rank, tuple(keys)) for rank, keys in groups.items()]
    at = sum(1 for f in families if f.rank < EVENTS)
    families.insert(at, Family("event", which, EVENTS))
    out = Candidates(enumerate(families))
    out.which = which
    out.plain_key = found[0][2] if len(found) == 1 and found[0][3] == "plain" else None
    out.roles = roles
    return out


_BY_KEYS_SIZE, _BY_KEYS_MAX_KEYS = 1024, 128


def _both(attrs: Any) -> dict[Which, Candidates]:
    return {PROMPT: candidates(attrs, PROMPT), COMPLETION: candidates(attrs, COMPLETION)}


_by_keys: KeySetCache[dict[Which, Candidates]] = KeySetCache(_both, _BY_KEYS_SIZE,
                                                             _BY_KEYS_MAX_KEYS)


def both_sides(attrs: Any) -> dict[Which, Candidates]:
    """:func:`candidates` of both sides, remembered per key set (the redactor's lookup)."""
    return _by_keys.get(attrs)


@dataclass(slots=True)
class Layout:
    """One side's text: the sources in order and the pieces laid out in the text."""

    sources: list[Source] = field(default_factory=list)
    laid: list[str] = field(default_factory=list)  # pieces in the text, in order

    @property
    def starts(self) -> list[int]:
        out, offset = [], 0
        for piece in self.laid:
            out.append(offset)
            offset += len(piece) + len(SEPARATOR)
        return out

    @property
    def length(self) -> int:
        return sum(map(len, self.laid)) + len(SEPARATOR) * max(0, len(self.laid) - 1)

    def text(self) -> str | None:
        return SEPARATOR.join(self.laid) if self.laid else None


def read(span: Any, attrs: Any, events: Any, found_in: Candidates) -> str | None:
    """The span's text on one side (the layout of every family present), or None."""
    key = found_in.plain_key
    if key is not None and not (events and content_events(span, events)[found_in.which]):
        value = decode_value(attrs[key])  # fast path: one plain key, no content event
        if type(value) is str and not textjson.is_binary(value):
            return value or None
    text = _plain_layout(span, attrs, events, found_in)
    if text is FALLBACK:
        return layout(span, found_in, attrs, events).text()
    return text  # type: ignore[no-any-return]


def read_roles(span: Any, attrs: Any, events: Any, found_in: Candidates
               ) -> tuple[str | None, list[Segment] | None]:
    """:func:`read`, and who wrote each piece (:func:`textroles.segments`) when a key or
    a content event can say; None then means every piece has the side's default role."""
    if not found_in.roles and not (events and found_in.which == PROMPT and any(
            textroles.event_has_role(e) for _, e in content_events(span, events)[PROMPT])):
        return read(span, attrs, events, found_in), None
    lay = layout(span, found_in, attrs, events)
    text = lay.text()
    return text, (textroles.segments(span, lay.sources, found_in.which) if text else None)


def _plain_layout(span: Any, attrs: Any, events: Any, found_in: Candidates) -> Any:
    """:func:`layout`'s text when every value is a plain string (OpenLIT's attribute and
    its event copy, indexed messages), without building sources; else FALLBACK."""
    laid: list[str] = []
    seen: set[str] | None = None  # set once the first family with text is laid out
    for _, family in found_in:
        values = []
        if family.kind == "attr":
            for key, parse in family.keys:
                if key in attrs:
                    value = plain_value(attrs[key]) if parse == "plain" else FALLBACK
                    if value is FALLBACK:
                        return FALLBACK
                    if value:
                        values.append(value)
        elif events:
            for _, event in content_events(span, events)[family.which]:
                event_attrs = event.attributes
                for key in sorted(event_attrs):
                    if key not in EVENT_METADATA:
                        value = FALLBACK if key in EVENT_JSON else plain_value(event_attrs[key])
                        if value is FALLBACK:
                            return FALLBACK
                        if value:
                            values.append(value)
        if seen is None:
            if values:
                laid.extend(values)
                seen = set(laid)
            continue
        for value in values:
            if value not in seen:
                laid.append(value)
                seen.add(value)
    return SEPARATOR.join(laid) if laid else None


def layout(span: Any, found_in: Candidates | None = None, attrs: Any = None,
           events: Any = None, which: Which = PROMPT, with_paths: bool = False) -> Layout:
    """Lay out one side's text (``found_in`` from :func:`candidates`, else of ``which``);
    ``with_paths`` keeps where each JSON piece sits, for :func:`write_back`."""
    attrs = span.attributes if attrs is None else attrs
    events = span.events if events is None else events
    if found_in is None:
        found_in = candidates(attrs, which)
    out = Layout()
    seen: dict[str, int] = {}
    offset = 0
    primary = True  # the first family with text is laid out whole
    for _, family in found_in:
        sources = _sources(span, family, attrs, events, with_paths)
        for source in sources:
            for piece in source.pieces:
                start = seen.get(piece) if not primary else None
                if start is None:
                    start = offset
                    out.laid.append(piece)
                    offset += len(piece) + len(SEPARATOR)
                    seen.setdefault(piece, start)
                source.starts.append(start)
            out.sources.append(source)
        primary = primary and not sources
    return out


_ENCODED_NAMES = tuple(b"\x12" + bytes((len(n),)) + n.encode() for n in CONTENT_EVENTS)
_last: list[tuple[Any, dict[Which, list[tuple[int, Any]]]]] = [(None, {})]


def content_events(span: Any, events: Any) -> dict[Which, list[tuple[int, Any]]]:
    """The span's content events by side, as (index, event). One pass over the events
    per span (both sides ask; remembered for the last ``events`` seen); a span with many
    events (one per streamed chunk) is first checked on its bytes for an event name."""
    memo = _last[0]  # replaced whole, so a reader in another thread sees a matching pair
    if memo[0] is events:
        return memo[1]
    found: dict[Which, list[tuple[int, Any]]] = {PROMPT: [], COMPLETION: []}
    data = span.SerializeToString() if len(events) > 8 else None
    if data is None or any(name in data for name in _ENCODED_NAMES):
        for i, event in enumerate(events):
            name = event.name
            if name in CONTENT_EVENTS:
                found[PROMPT if name in EVENTS_BY_SIDE[PROMPT] else COMPLETION].append(
                    (i, event))
    _last[0] = (events, found)
    return found


def _sources(span: Any, family: Family, attrs: Any, events: Any, with_paths: bool
             ) -> list[Source]:
    found: list[Source] = []
    if family.kind == "attr":
        for key, parse in family.keys:
            if key in attrs:
                if parse == "mime":
                    mime_key = MIME_KEYS[key]
                    mime = decode_value(attrs[mime_key]) if mime_key in attrs else None
                    parse = "json" if isinstance(mime, str) and "json" in mime else "plain"
                add_source(found, key, None, attrs[key], parse, with_paths)
        return found
    for i, event in content_events(span, events)[family.which] if events else ():
        event_attrs = event.attributes
        for key in sorted(event_attrs):
            if key not in EVENT_METADATA:
                add_source(found, key, i, event_attrs[key],
                           "json" if key in EVENT_JSON else "plain", with_paths)
    return found


