"""Prompt and completion text in every dialect: read it, and write a redacted copy back.

A *family* is one convention's way of carrying the text (our ``llm_observe.prompt``,
OpenLLMetry's indexed ``gen_ai.prompt.{i}.content``, OpenInference's
``llm.input_messages.{i}.message.content``, GenAI semconv's JSON
``gen_ai.input.messages``, OpenLIT's ``gen_ai.prompt`` attribute or event ...).
The span's text is the first family present, its pieces joined by newlines.
Several families can carry the same text (OpenLIT sets the attribute *and* the
event; OpenInference sets the messages *and* ``input.value``), so redaction
rewrites every family present (see :func:`sources` and :func:`write_back`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from llm_observe import semconv as sc
from llm_observe.otlp.wire import decode_value, encode_value

PROMPT: Literal["prompt"] = "prompt"
COMPLETION: Literal["completion"] = "completion"
Which = Literal["prompt", "completion"]
MAX_INDEXED = 256  # indexed message keys read per span (gen_ai.prompt.0 .. .255)
SEPARATOR = "\n"


@dataclass(frozen=True, slots=True)
class Family:
    kind: Literal["attr", "indexed", "messages", "event", "mime"]
    key: str  # attribute key, or key prefix for "indexed"
    suffix: str = ""  # "indexed": key suffix; "event": the event name
    mime_key: str = ""  # "mime": the mime-type attribute that must not say JSON

    def keys(self) -> list[str]:
        if self.kind != "indexed":
            return [self.key]
        return [f"{self.key}{i}{self.suffix}" for i in range(MAX_INDEXED)]

    def role_keys(self) -> list[str]:
        """"indexed": each message's role key, present even when its content is not (an
        assistant message that only calls tools has no ``.content`` in OpenLLMetry or
        OpenInference), so the messages after it are still read."""
        role = self.suffix.replace("content", "role")
        return [f"{self.key}{i}{role}" for i in range(MAX_INDEXED)]


def _families(which: Which) -> tuple[Family, ...]:
    prompt = which == PROMPT
    return (
        Family("attr", sc.PROMPT_TEXT if prompt else sc.COMPLETION_TEXT),
        Family("indexed", sc.OLLM_PROMPT_PREFIX if prompt else sc.OLLM_COMPLETION_PREFIX,
               ".content"),
        Family("indexed", sc.OI_INPUT_MESSAGES_PREFIX if prompt else sc.OI_OUTPUT_MESSAGES_PREFIX,
               sc.OI_MESSAGE_CONTENT_SUFFIX),
        Family("messages", sc.GEN_AI_INPUT_MESSAGES if prompt else sc.GEN_AI_OUTPUT_MESSAGES),
        Family("attr", sc.GEN_AI_PROMPT if prompt else sc.GEN_AI_COMPLETION),
        Family("event", sc.GEN_AI_PROMPT if prompt else sc.GEN_AI_COMPLETION,
               sc.GEN_AI_CONTENT_PROMPT_EVENT if prompt else sc.GEN_AI_CONTENT_COMPLETION_EVENT),
        Family("mime", sc.OI_INPUT_VALUE if prompt else sc.OI_OUTPUT_VALUE,
               mime_key=sc.OI_INPUT_MIME_TYPE if prompt else sc.OI_OUTPUT_MIME_TYPE),
    )


FAMILIES: dict[Which, tuple[Family, ...]] = {PROMPT: _families(PROMPT),
                                             COMPLETION: _families(COMPLETION)}
# Precomputed indexed (content, role) keys, so the hot path never formats strings.
_INDEXED: dict[tuple[str, str], list[tuple[str, str]]] = {
    (f.key, f.suffix): list(zip(f.keys(), f.role_keys(), strict=True))
    for fams in FAMILIES.values() for f in fams if f.kind == "indexed"}


@dataclass(slots=True)
class Source:
    """One attribute holding (part of) a text: where it is and the text pieces in it."""

    family: int
    key: str
    event: int | None  # index into span.events when the attribute is on an event
    json: bool  # the value is a JSON message list; pieces are its text parts
    pieces: list[str]


Candidates = tuple[tuple[int, Family], ...]


def candidates(attrs: Any, which: Which) -> Candidates:
    """Families that may hold the text given the attribute keys (event families always may)."""
    return tuple((i, f) for i, f in enumerate(FAMILIES[which]) if _may_hold(f, attrs))


def _may_hold(family: Family, attrs: Any) -> bool:
    # Runs per span for spans past the plan cache's key limit: no key lists are built here.
    if family.kind == "event":
        return True
    if family.kind == "indexed":
        content, role = _INDEXED[(family.key, family.suffix)][0]
        return content in attrs or role in attrs
    return family.key in attrs


def read(span: Any, attrs: Any, events: Any, found_in: Candidates) -> str | None:
    """The text of the first candidate family present, pieces joined by newlines."""
    for index, family in found_in:
        kind = family.kind
        if kind == "attr":  # one plain string: no Source objects on the hot path
            value = decode_value(attrs[family.key])
            if isinstance(value, str) and value:
                return value
            continue
        if kind == "event" and not events:
            continue
        found = _read(span, attrs, index, family)
        if found:
            return SEPARATOR.join(p for s in found for p in s.pieces)
    return None


def sources(span: Any, which: Which, *, include_raw: bool = False) -> list[list[Source]]:
    """Every family present on the span, in priority order (the first is the text's).

    ``include_raw`` adds raw JSON bodies (OpenInference ``input.value`` with a JSON
    mime type), which are never read as the text but must be redacted too.
    """
    attrs = span.attributes
    out = []
    for index, family in enumerate(FAMILIES[which]):
        found = _read(span, attrs, index, family, include_raw)
        if found:
            out.append(found)
    return out


def _read(span: Any, attrs: Any, index: int, family: Family,
          include_raw: bool = False) -> list[Source]:
    kind = family.kind
    if kind == "attr" or kind == "messages":
        if family.key not in attrs:
            return []
        return _source(index, family.key, None, attrs[family.key], kind == "messages")
    if kind == "indexed":
        found: list[Source] = []
        for key, role in _INDEXED[(family.key, family.suffix)]:
            if key in attrs:
                found.extend(_source(index, key, None, attrs[key], False))
            elif role not in attrs:
                break  # neither content nor role: past the last message
        return found
    if kind == "mime":
        if family.key not in attrs:
            return []
        mime = decode_value(attrs[family.mime_key]) if family.mime_key in attrs else None
        if isinstance(mime, str) and "json" in mime and not include_raw:
            return []  # a raw JSON request/response body is not the prompt text
        return _source(index, family.key, None, attrs[family.key], False)
    events = span.events
    if not events:
        return []
    found = []
    for i, event in enumerate(events):
        if event.name == family.suffix and family.key in event.attributes:
            found.extend(_source(index, family.key, i, event.attributes[family.key], False))
    return found


def _source(index: int, key: str, event: int | None, raw: bytes, is_json: bool) -> list[Source]:
    value = decode_value(raw)
    if not isinstance(value, str) or not value:
        return []  # non-string text is not scanned or counted (and not a metric input)
    if is_json:
        pieces = _json_pieces(value)
        if pieces is not None:
            return [Source(index, key, event, True, pieces)] if pieces else []
    return [Source(index, key, event, False, [value])]


def _json_pieces(value: str) -> list[str] | None:
    """Text parts of a GenAI-semconv message list, or None if the value is not one."""
    try:
        messages = json.loads(value)
    except ValueError:
        return None
    if not isinstance(messages, list):
        return None
    pieces: list[str] = []
    _visit(messages, pieces.append)
    return pieces


# Part fields that carry text, by part type (GenAI semconv gen-ai-input/output-messages
# JSON schemas): tool-call arguments and tool results hold user data as often as text does.
_PART_TEXT = {"text": "content", "reasoning": "content", "tool_call": "arguments",
              "tool_call_response": "response"}


def _visit(messages: list[Any], on_text: Any) -> None:
    """Call ``on_text`` for each text piece, in order; a returned str replaces the piece.

    Shapes: semconv ``{"role", "parts": [{"type": "text", "content": ...}, {"type":
    "tool_call", "arguments": ...}, {"type": "tool_call_response", "response": ...}]}``
    and the older OpenAI-like ``{"role", "content": "...", "tool_calls": [{"function":
    {"arguments": "..."}}]}``. A JSON-valued field is visited as its JSON text and, when
    replaced, parsed back (a redaction inside a JSON string keeps it valid JSON).
    """
    for message in messages:
        if not isinstance(message, dict):
            continue
        parts = message.get("parts")
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, dict):
                    field = _PART_TEXT.get(part.get("type", "text"))
                    if field is not None:
                        _visit_field(part, field, on_text)
            continue
        _visit_field(message, "content", on_text)
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                _visit_field(function, "arguments", on_text)


def _visit_field(container: dict[str, Any], field: str, on_text: Any) -> None:
    value = container.get(field)
    if value is None or value == "":
        return
    is_text = isinstance(value, str)
    if not is_text and not isinstance(value, (dict, list)):
        return
    new = on_text(value if is_text else json.dumps(value, ensure_ascii=False))
    if not isinstance(new, str):
        return
    if is_text:
        container[field] = new
        return
    try:
        container[field] = json.loads(new)
    except ValueError:
        container[field] = new


def write_back(span: Any, source: Source, pieces: list[str]) -> None:
    """Replace ``source``'s pieces on the span (e.g. with redacted copies)."""
    attrs = span.attributes if source.event is None else span.events[source.event].attributes
    if not source.json:
        attrs[source.key] = encode_value(pieces[0])
        return
    messages = json.loads(decode_value(attrs[source.key]))
    replacements = iter(pieces)
    _visit(messages, lambda _old: next(replacements, None))
    attrs[source.key] = encode_value(json.dumps(messages, ensure_ascii=False))
