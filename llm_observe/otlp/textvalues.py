"""One attribute value that carries text: its pieces, and how to write them back.

A plain value (a string; an integer long enough to be a number worth scanning) is one
piece; a structured one (JSON text of a JSON-valued key, an OTLP array or kvlist) is
its text leaves (:mod:`otlp.textjson`). The reader (:mod:`otlp.texts`) and the redactor
read a value the same way, so the offsets the scanner reports map onto the same pieces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from llm_observe.otlp import textjson
from llm_observe.otlp.textkeys import Parse
from llm_observe.otlp.wire import BAD, decode_value, encode_value

FALLBACK: Any = object()  # plain_value: not a plain string; read it with add_source


@dataclass(slots=True)
class Source:
    """One attribute holding text: where it is, its value and the text pieces in it."""

    key: str
    event: int | None  # index into span.events when the attribute is on an event
    doc: Any  # plain: the str (or int) value; structured: the parsed dict/list
    json_text: bool  # structured: the value was JSON text (else an OTLP array/kvlist)
    pieces: list[str]
    paths: list[textjson.Path]  # structured: each piece's place in ``doc`` (if asked for)
    starts: list[int] = field(default_factory=list)  # each piece's offset in the side's text
    shared: bool = False  # ``doc`` is the reader's cached parse of a repeated value

    @property
    def structured(self) -> bool:
        return isinstance(self.doc, (dict, list))


def add_source(found: list[Source], key: str, event: int | None, raw: bytes, parse: Parse,
               with_paths: bool) -> None:
    """Append the source of one attribute value to ``found`` if it holds text
    (``with_paths``: keep where each JSON piece sits, for :func:`write_back`)."""
    value = decode_value(raw)
    if value is BAD:
        value = _lenient_string(raw)
    if isinstance(value, str):
        if not value:
            return
        if parse == "json":
            if not with_paths and len(value) <= _CACHED_CHARS:
                cached = _read_cache.get(value)
                if cached is None:
                    if len(_read_cache) >= _CACHE_SIZE:
                        _read_cache.clear()
                    cached = _read_cache[value] = _structured(value, textjson.parse(value), None)
                if cached[1]:
                    found.append(Source(key, event, cached[0], True, list(cached[1]), [],
                                        shared=True))
                    return
                if cached[0] is not None:
                    return
            else:
                paths: list[textjson.Path] | None = [] if with_paths else None
                doc, pieces = _structured(value, textjson.parse(value), paths)
                if pieces:
                    found.append(Source(key, event, doc, True, pieces, paths or []))
                    return
                if doc is not None:
                    return
        if not textjson.is_binary(value):
            found.append(Source(key, event, value, False, [value], [()]))
        return
    if isinstance(value, (dict, list)):  # an OTLP array or kvlist value
        paths = [] if with_paths else None
        doc, pieces = _structured(value, value, paths)
        if pieces:
            found.append(Source(key, event, doc, False, pieces, paths or []))
        elif doc is None:  # too deep: its JSON text is read as plain text
            text = textjson.dumps(value)
            found.append(Source(key, event, text, False, [text], [()]))
        return
    number = textjson.number_piece(value)
    if number is not None:
        found.append(Source(key, event, value, False, [number], [()]))


_CACHE_SIZE, _CACHED_CHARS = 128, 32_768
# JSON values repeat across spans (tool definitions, system instructions, invocation
# parameters): the reader parses each once. Never used for the redactor's writable copy.
_read_cache: dict[str, tuple[Any, list[str]]] = {}


def _structured(value: Any, doc: Any, paths: list[textjson.Path] | None
                ) -> tuple[Any, list[str]]:
    """``doc`` (parsed from ``value``) and its text leaves; ``(None, [])`` when it is no
    dict/list or nests too deep, so ``value`` is read as plain text."""
    if doc is None:
        return None, []
    pieces: list[str] = []
    try:
        textjson.leaves(doc, pieces, paths)
    except textjson.TooDeep:  # the reader and the redactor both read it as plain text
        if paths:
            paths.clear()
        return None, []
    return doc, pieces


def plain_value(raw: bytes) -> Any:
    """A plain key's text as :func:`add_source` reads it ("" for no piece), or
    :data:`FALLBACK` for a value that is not a plain string (read it with add_source)."""
    value = decode_value(raw)
    if type(value) is str:
        return "" if textjson.is_binary(value) else value
    return "" if value is None else FALLBACK


def _lenient_string(raw: bytes) -> Any:
    """A string value that is not valid UTF-8, decoded with replacement characters (its
    text is still scanned); None for any other undecodable value."""
    if raw[:1] != b"\x0a":
        return None
    size, shift, i = 0, 0, 1
    while i < len(raw) and i < 11:
        byte = raw[i]
        size |= (byte & 0x7F) << shift
        shift, i = shift + 7, i + 1
        if byte < 0x80:
            return raw[i:i + size].decode(errors="replace") if len(raw) == i + size else None
    return None


def write_back(span: Any, source: Source, pieces: list[str]) -> None:
    """Replace ``source``'s pieces on the span (e.g. with redacted copies)."""
    attrs = span.attributes if source.event is None else span.events[source.event].attributes
    if not source.structured:
        attrs[source.key] = encode_value(pieces[0])
        return
    doc = source.doc
    for path, old, new in zip(source.paths, source.pieces, pieces, strict=True):
        if new != old:
            textjson.set_leaf(doc, path, new)
    if source.json_text or not _flat_list(doc):
        attrs[source.key] = encode_value(textjson.dumps(doc))
    else:
        attrs[source.key] = encode_value(doc)  # an OTLP array of scalars stays one


def _flat_list(doc: Any) -> bool:
    return isinstance(doc, list) and not any(isinstance(v, (dict, list)) for v in doc)
