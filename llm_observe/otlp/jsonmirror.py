"""OTLP/JSON straight into the mirror schema (:mod:`.wire`), without protobuf bytes between.

The JSON door's hot path. Encoding a JSON span to protobuf in Python and parsing it back
cost ~15 µs a span, most of the door's extra cost over the protobuf door; a span of the
common shape (ids, name, kind, times, attributes, status) is instead built as a mirror
``Span`` directly, its attributes going into the mirror's map as ``AnyValue`` bytes (about
half the work: no ``KeyValue`` framing, no second parse); its other fields (events, links,
flags, dropped counts) are encoded to protobuf and merged in. A span not of that shape —
snake_case ids or times, a value of an unexpected type or range — takes the general path
(:func:`jsonwire._message`, then ``Span.FromString``), which also words the error for a bad
value. Either way the result equals ``Request.FromString(to_protobuf(body))``: a test
compares them, hostile shapes included.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from llm_observe.otlp.jsonvalues import SMALL, Bad, any_value, string
from llm_observe.otlp.jsonwire import (
    NESTED_TOO_DEEPLY,
    STREAM_MIN_BYTES,
    encode_field,
    gc_paused,
    invalid,
    message_table,
    parse,
    to_protobuf,
)
from llm_observe.otlp.jsonwire import _message as _encode
from llm_observe.otlp.walk import RequestInvalid, decode_request
from llm_observe.otlp.wire import Request, varint

_SPAN = message_table(Span.DESCRIPTOR)
_STATUS = message_table(Status.DESCRIPTOR)
_RESOURCE, _SCOPE = (message_table(ResourceSpans.DESCRIPTOR)["resource"][3],
                     message_table(ScopeSpans.DESCRIPTOR)["scope"][3])
_KINDS = {v.name: v.number for v in Span.DESCRIPTOR.enum_types_by_name["SpanKind"].values}
# the span fields the direct path takes (JSON names); any other known field: general path
_DIRECT = frozenset({"traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano",
                     "endTimeUnixNano", "attributes", "status"})
# the same fields spelt in snake_case: their order against the camelCase ones would matter
_SNAKE = frozenset({"trace_id", "span_id", "parent_span_id", "start_time_unix_nano",
                    "end_time_unix_nano"})
_INT32_MAX, _U64 = 2**31 - 1, 2**64
_CODES = {c: _encode({"code": c}, _STATUS) for v in Status.DESCRIPTOR.enum_types_by_name[
    "StatusCode"].values for c in (v.name, v.number)}  # the status of nearly every span
_pack_d = struct.Struct("<d").pack


class _General(Exception):
    """This span is not of the common shape: take the general path."""


def to_request(body: bytes) -> Any:
    """The mirror ``Request`` of an OTLP/JSON trace request body; RequestInvalid naming the
    first bad place if it is not one. Bodies over STREAM_MIN_BYTES go through the piecewise
    parser (:mod:`.jsonstream`) and protobuf bytes, as they hold the GIL less that way."""
    if len(body) > STREAM_MIN_BYTES:
        return decode_request(to_protobuf(body))
    try:
        with gc_paused():
            return _request(parse(body))
    except Bad as exc:
        raise invalid(exc) from None
    except RecursionError:
        raise RequestInvalid(NESTED_TOO_DEEPLY) from None


Put = Callable[[Any, Any], None]  # (JSON value, the mirror message being filled)


def _fill(obj: Any, fields: dict[str, Put], target: Any) -> None:
    """Fill ``target`` from ``obj``'s known fields (unknown ones are ignored)."""
    if type(obj) is not dict:
        raise Bad("must be an object")
    for key, value in obj.items():
        put = fields.get(key)
        if put is not None and value is not None:
            try:
                put(value, target)
            except Bad as exc:
                exc.where.append(key)
                raise


def _adder(name: str, add: Callable[..., Any]) -> Put:
    """A repeated field: each item added in place (a message built apart and appended
    would be copied: twice the cost of the span)."""
    def put(items: Any, target: Any) -> None:
        if type(items) is not list:
            raise Bad("must be a list")
        container = getattr(target, name)
        for i, item in enumerate(items):
            try:
                add(item, container)
            except Bad as exc:
                exc.where.append(f"[{i}]")
                raise
    return put


def _setter(name: str, build: Callable[..., Any]) -> Put:
    def put(value: Any, target: Any) -> None:
        setattr(target, name, build(value))
    return put


def _fields(**builders: tuple[bool, Callable[..., Any]]) -> dict[str, Put]:
    """A message's fields by JSON and proto name: (repeated, add one item / build a value)."""
    out: dict[str, Put] = {}
    for name, (repeated, build) in builders.items():
        put = (_adder if repeated else _setter)(name, build)
        camel = name.split("_")[0] + "".join(p.title() for p in name.split("_")[1:])
        out[name] = out[camel] = put
    return out


def _raw(table: dict[str, Any] | None) -> Callable[[Any], bytes]:
    """A message the mirror keeps as raw bytes (resource, scope), encoded in full."""
    assert table is not None
    return lambda value: _encode(value, table)


def _add_span(obj: Any, spans: Any) -> None:
    if type(obj) is dict:
        n = len(spans)
        try:
            kwargs, extra = _direct_span(obj)
            span = spans.add(**kwargs)  # (a lone surrogate in a name or key raises here)
            if extra:  # parsed after the direct fields, as the general path's bytes would be
                span.MergeFromString(extra)
            return
        except Exception:  # not the common shape: the general path decides (and words it)
            del spans[n:]  # nothing half added stays
    data = _encode(obj, _SPAN)  # (raises Bad, naming the place, before anything is added)
    spans.add().MergeFromString(data)


def _direct_span(obj: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    """The mirror Span's fields of a common-shape span, and the protobuf bytes of its other
    fields; raises (anything) for a span the general path must take."""
    extra = b""  # the fields the direct path leaves to the general encoder (events, flags ...)
    if not _DIRECT.issuperset(obj):
        out: list[bytes] = []
        for key, value in obj.items():
            if key in _DIRECT or value is None or key not in _SPAN:
                continue  # (unknown fields are ignored)
            if key in _SNAKE:
                raise _General
            encode_field(out, _SPAN[key], value)
        extra = b"".join(out)
    get = obj.get
    name = get("name")
    if name is None:
        name = ""
    elif type(name) is not str:
        raise _General
    kind = get("kind")
    if kind is not None:
        kind = _KINDS[kind] if type(kind) is str else kind
        if type(kind) is not int or not -_INT32_MAX - 1 <= kind <= _INT32_MAX:
            raise _General
    status = get("status")
    return {"trace_id": _id(get("traceId")), "span_id": _id(get("spanId")),
            "parent_span_id": _id(get("parentSpanId")), "name": name, "kind": kind or 0,
            "start_time_unix_nano": _time(get("startTimeUnixNano")),
            "end_time_unix_nano": _time(get("endTimeUnixNano")),
            "attributes": _attributes(get("attributes")),
            "status": b"" if status is None else _status(status)}, extra


def _id(value: Any) -> bytes:
    return b"" if value is None else bytes.fromhex(value)


def _time(value: Any) -> int:
    if value is None:
        return 0
    if type(value) is str and len(value) < 20 and value.isascii() and value.isdigit():
        return int(value)
    if type(value) is int and 0 <= value < _U64:
        return value
    raise _General


def _status(value: Any) -> bytes:
    if type(value) is dict and len(value) == 1:
        code = value.get("code")
        if type(code) is str or type(code) is int:  # (not a bool: True == 1)
            known = _CODES.get(code)
            if known is not None:
                return known
    return _encode(value, _STATUS)


def _attributes(items: Any) -> dict[str, bytes]:
    """An attribute list as the mirror's map: key → AnyValue bytes (the last of a repeated
    key wins, as when the protobuf is parsed). Strings, integers, doubles and arrays of
    strings (finish reasons: in every GenAI span) inline."""
    out: dict[str, bytes] = {}
    if items is None:
        return out
    strings = _strings
    for kv in items:
        key, value = kv["key"], kv["value"]
        if type(key) is not str or type(value) is not dict:
            raise _General
        if len(value) == 1:
            v = value.get("stringValue")
            if v is not None:
                av = strings.get(v)
                out[key] = _string(v) if av is None else av
                continue
            v = value.get("intValue")
            if type(v) is str and len(v) < 19 and v.isascii() and v.isdigit():
                n = int(v)
                out[key] = b"\x18" + (SMALL[n] if n < 128 else varint(n))
                continue
            v = value.get("doubleValue")
            if type(v) is float:
                out[key] = b"\x21" + _pack_d(v)
                continue
            v = value.get("arrayValue")
            if v is not None:
                out[key] = _string_array(v["values"])
                continue
        out[key] = any_value(value)
    return out


# string value → its AnyValue bytes: model, provider and operation names repeat in every
# request. Short values only, emptied when full (hostile unique values cost no memory).
_strings: dict[str, bytes] = {}


def _string(value: str) -> bytes:
    data = value.encode()  # (not a str, or a lone surrogate: raises)
    n = len(data)
    av = b"\x0a" + (SMALL[n] if n < 128 else varint(n)) + data
    if n <= 64:
        if len(_strings) >= 4096:
            _strings.clear()
        _strings[value] = av
    return av


def _string_array(values: list[Any]) -> bytes:
    """The AnyValue of a short array of strings; raises for any other (the general path)."""
    strings, out = _strings, []
    for item in values:  # (not a list: a dict or str iterates to values without a get)
        if len(item) != 1:
            raise _General
        v = item["stringValue"]
        av = strings.get(v)
        if av is None:
            av = _string(v)
        out.append(b"\x0a" + SMALL[len(av)] + av)  # (IndexError if long)
    data = b"".join(out)
    return b"\x2a" + SMALL[len(data)] + data


def _text(value: Any) -> str:
    string(value)  # a str without lone surrogates, or Bad
    return str(value)


def _add_scope_spans(obj: Any, container: Any) -> None:
    _fill(obj, _scope_spans_fields, container.add())


def _add_resource_spans(obj: Any, container: Any) -> None:
    _fill(obj, _resource_spans_fields, container.add())


_scope_spans_fields = _fields(scope=(False, _raw(_SCOPE)), spans=(True, _add_span),
                              schema_url=(False, _text))
_resource_spans_fields = _fields(resource=(False, _raw(_RESOURCE)),
                                 scope_spans=(True, _add_scope_spans), schema_url=(False, _text))
_request_fields = _fields(resource_spans=(True, _add_resource_spans))


def _request(data: Any) -> Any:
    request = Request()
    _fill(data, _request_fields, request)
    return request
