"""OTLP trace wire format, decoded for speed: a mirror schema with attribute maps.

The official ``opentelemetry-proto`` classes decode an attribute list into one
Python ``KeyValue`` + ``AnyValue`` wrapper per attribute, and walking them costs
~0.6 µs per attribute — most of a receiver's time (issue 4 measured the walk at
~75% of a bare receiver's cost). This module declares a *mirror* of the OTLP
trace messages, wire-compatible with the real ones (same field numbers and wire
types; opentelemetry-proto ``trace/v1/trace.proto``, ``common/v1/common.proto``):

- ``repeated KeyValue attributes`` is declared as ``map<string, bytes>``. A
  map entry is encoded exactly like ``KeyValue{key = 1; value = 2}``, so upb
  parses the attribute list straight into a C hash map: a key test is ~35 ns
  and only the values we read are ever turned into Python objects (their
  ``AnyValue`` bytes are decoded by :func:`decode_value`).
- ``resource``, ``scope`` and a span's ``status`` are kept as raw bytes: they are
  forwarded as received; only ``service.name`` is read from the resource and the
  code from the status (:func:`is_error_status`).
- Fields we never read (kind, links, trace_state, flags, ...) are not declared;
  protobuf keeps them as unknown fields and writes them back unchanged, so a
  re-serialised span carries everything the sender sent (attribute order and
  duplicate keys aside: a map keeps the last value of a repeated key).

Strings declared ``string`` (span and event names) are UTF-8 checked by upb at
parse time, as in the official schema; attribute values are checked when decoded.
"""

from __future__ import annotations

import struct
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

_PKG = "llm_observe.otlp_mirror"
_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED

# (message, [(field, number, type, label, message type)], has an attribute map)
_SCHEMA: tuple[tuple[str, tuple[tuple[str, int, int, int, str], ...], bool], ...] = (
    ("Request", (("resource_spans", 1, _F.TYPE_MESSAGE, _REP, "ResourceSpans"),), False),
    ("ResourceSpans", (("resource", 1, _F.TYPE_BYTES, _OPT, ""),
                       ("scope_spans", 2, _F.TYPE_MESSAGE, _REP, "ScopeSpans"),
                       ("schema_url", 3, _F.TYPE_STRING, _OPT, "")), False),
    ("Resource", (("attributes", 1, _F.TYPE_MESSAGE, _REP, "Resource.AttributesEntry"),), True),
    ("ScopeSpans", (("scope", 1, _F.TYPE_BYTES, _OPT, ""),
                    ("spans", 2, _F.TYPE_MESSAGE, _REP, "Span"),
                    ("schema_url", 3, _F.TYPE_STRING, _OPT, "")), False),
    ("Span", (("trace_id", 1, _F.TYPE_BYTES, _OPT, ""),
              ("span_id", 2, _F.TYPE_BYTES, _OPT, ""),
              ("parent_span_id", 4, _F.TYPE_BYTES, _OPT, ""),
              ("name", 5, _F.TYPE_STRING, _OPT, ""),
              ("kind", 6, _F.TYPE_INT32, _OPT, ""),
              ("start_time_unix_nano", 7, _F.TYPE_FIXED64, _OPT, ""),
              ("end_time_unix_nano", 8, _F.TYPE_FIXED64, _OPT, ""),
              ("attributes", 9, _F.TYPE_MESSAGE, _REP, "Span.AttributesEntry"),
              ("events", 11, _F.TYPE_MESSAGE, _REP, "Event"),
              ("dropped_events_count", 12, _F.TYPE_UINT32, _OPT, ""),
              ("status", 15, _F.TYPE_BYTES, _OPT, "")), True),
    ("Event", (("time_unix_nano", 1, _F.TYPE_FIXED64, _OPT, ""),
               ("name", 2, _F.TYPE_STRING, _OPT, ""),
               ("attributes", 3, _F.TYPE_MESSAGE, _REP, "Event.AttributesEntry")), True),
    ("InstrumentationScope", (("name", 1, _F.TYPE_STRING, _OPT, ""),
                              ("version", 2, _F.TYPE_STRING, _OPT, "")), False),
)


def _build() -> dict[str, Any]:
    f = descriptor_pb2.FileDescriptorProto(name="llm_observe_otlp_mirror.proto", package=_PKG,
                                           syntax="proto3")
    for name, fields, has_map in _SCHEMA:
        m = f.message_type.add(name=name)
        for fname, number, ftype, label, tname in fields:
            fd = m.field.add(name=fname, number=number, type=ftype, label=label)
            if tname:
                fd.type_name = f".{_PKG}.{tname}"
        if has_map:
            entry = m.nested_type.add(name="AttributesEntry")
            entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_OPT)
            entry.field.add(name="value", number=2, type=_F.TYPE_BYTES, label=_OPT)
            entry.options.map_entry = True
    pool = descriptor_pool.DescriptorPool()
    pool.Add(f)
    return {name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PKG}.{name}"))
            for name, _, _ in _SCHEMA}


_CLASSES = _build()
Request: Any = _CLASSES["Request"]
Resource: Any = _CLASSES["Resource"]
Span: Any = _CLASSES["Span"]
Event: Any = _CLASSES["Event"]
InstrumentationScope: Any = _CLASSES["InstrumentationScope"]

STATUS_CODE_ERROR = 2  # opentelemetry.proto.trace.v1.Status.StatusCode.STATUS_CODE_ERROR
ERROR_STATUS = b"\x18\x02"  # a serialized Status{code: ERROR}
SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3


class BadValue:
    """Marker for an attribute value that is not a valid AnyValue (e.g. invalid UTF-8)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<invalid AnyValue>"


BAD = BadValue()
_unpack_double = struct.Struct("<d").unpack
_pack_double = struct.Struct("<d").pack


def decode_value(raw: bytes) -> Any:
    """The Python value of an encoded ``AnyValue``: str, bool, int, float, bytes, list,
    dict, None (unset) or :data:`BAD`. Fast paths cover the shapes SDKs emit."""
    if not raw:
        return None
    tag = raw[0]
    size = len(raw)
    if tag == 0x0A and size > 1:  # string_value
        n = raw[1]
        if n < 0x80:
            start = 2
        elif size > 2 and raw[2] < 0x80:  # 128 .. 16383 bytes
            n, start = (n & 0x7F) | raw[2] << 7, 3
        else:
            return _decode_slow(raw)
        if size == start + n:
            try:
                return raw[start:].decode()
            except UnicodeDecodeError:
                return BAD
    elif tag == 0x18:  # int_value: a varint, sign-extended from 64 bits
        value = shift = 0
        for i in range(1, size):
            byte = raw[i]
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                if i != size - 1:
                    break
                return value - (1 << 64) if value >= 1 << 63 else value
    elif tag == 0x21:  # double_value
        if size == 9:
            return _unpack_double(raw[1:])[0]
    elif tag == 0x10 and size == 2:  # bool_value
        return raw[1] != 0
    return _decode_slow(raw)


def is_error_status(raw: bytes) -> bool:
    """Whether a serialized ``Status`` (kept raw on the mirror Span) has code ERROR."""
    if not raw or raw == b"\x18\x01":
        return False
    if raw == ERROR_STATUS:
        return True
    i, size = 0, len(raw)
    while i < size:  # fields: message = 2 (length-delimited), code = 3 (varint)
        tag = raw[i]
        i += 1
        if tag == 0x18:
            return i < size and raw[i] == STATUS_CODE_ERROR
        if tag != 0x12:
            return False
        length = shift = 0
        while i < size:
            byte = raw[i]
            i += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        i += length
    return False


def _decode_slow(raw: bytes) -> Any:
    try:
        value = AnyValue.FromString(raw)
    except Exception:  # any parse failure is a bad value
        return BAD
    return _py(value)


def _py(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_py(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: _py(kv.value) for kv in value.kvlist_value.values}
    return getattr(value, kind)


# --- encoding ------------------------------------------------------------------

def varint(n: int) -> bytes:
    """Protobuf base-128 varint of a non-negative int (negatives as 64-bit two's complement)."""
    if n < 0:
        n += 1 << 64
    if n < 0x80:
        return bytes((n,))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field_bytes(number: int, payload: bytes) -> bytes:
    """A length-delimited field: tag, length, payload."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


_TRUE = b"\x10\x01"
_FALSE = b"\x10\x00"


def encode_value(value: Any) -> bytes:
    """Encode a Python value as ``AnyValue`` bytes (str, bool, int, float, bytes, lists)."""
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    if isinstance(value, str):
        data = value.encode()
        return b"\x0a" + varint(len(data)) + data
    if isinstance(value, int):
        return b"\x18" + varint(value)
    if isinstance(value, float):
        return b"\x21" + _pack_double(value)
    if isinstance(value, bytes):
        return field_bytes(7, value)
    if isinstance(value, (list, tuple)):
        return field_bytes(5, b"".join(field_bytes(1, encode_value(v)) for v in value))
    raise TypeError(f"cannot encode {type(value).__name__} as an OTLP AnyValue")
