"""OTLP/JSON → protobuf bytes: a JSON ExportTraceServiceRequest becomes the binary one.

OTLP/JSON is the proto3 JSON mapping with OTLP's deviations (opentelemetry-proto
docs/specification.md, "JSON Protobuf Encoding"): ``traceId``/``spanId``/``parentSpanId``
are hex, not base64; keys are lowerCamelCase (the original snake_case names are accepted
too, as the OTel Collector does); enums are integers (their names are accepted too);
64-bit integers come as strings or numbers; unknown fields are ignored. Every other
``bytes`` field (``bytesValue``) is base64.

The output is the request's protobuf encoding, so the JSON door then takes exactly the
path of the protobuf door (mirror-schema decode, walk, forwarding of every field). The
schema is read from the official descriptors at import, so no field is forgotten; the
attribute lists — most of a request — have a hand-written fast path. Measured against
``json_format.ParseDict`` in docs/receiver.md.

A body that is not valid OTLP/JSON raises :class:`RequestInvalid` naming the first bad
place (``resourceSpans[0].scopeSpans[0].spans[3].traceId: ...``).
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Callable
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from llm_observe.otlp.walk import RequestInvalid
from llm_observe.otlp.wire import varint

try:  # a 5-10x faster parser when installed (the collector extra declares it)
    import orjson

    _loads: Callable[[bytes], Any] = orjson.loads
except ImportError:  # pragma: no cover - the stdlib parser is the fallback
    import json

    _loads = json.loads

_F = FieldDescriptor
_HEX_IDS = frozenset({"trace_id", "span_id", "parent_span_id"})
_ANY = "opentelemetry.proto.common.v1.AnyValue"
_KEYVALUE = "opentelemetry.proto.common.v1.KeyValue"
_SMALL = [bytes((n,)) for n in range(128)]
_pack_d, _pack_f = struct.Struct("<d").pack, struct.Struct("<f").pack
_pack_q, _pack_i = struct.Struct("<Q").pack, struct.Struct("<I").pack
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_INT_RANGES = {_F.TYPE_INT32: (-(2**31), 2**31 - 1), _F.TYPE_ENUM: (-(2**31), 2**31 - 1),
               _F.TYPE_UINT32: (0, 2**32 - 1), _F.TYPE_INT64: (-(2**63), 2**63 - 1),
               _F.TYPE_UINT64: (0, 2**64 - 1), _F.TYPE_FIXED64: (0, 2**64 - 1),
               _F.TYPE_SFIXED64: (-(2**63), 2**63 - 1), _F.TYPE_FIXED32: (0, 2**32 - 1)}


class _Bad(Exception):
    """A bad value; ``where`` collects the path on the way up (no cost when all is well)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.where: list[str] = []


def _ld(tag: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return tag + (_SMALL[n] if n < 128 else varint(n)) + payload


def _str(value: Any) -> bytes:
    if type(value) is not str:
        raise _Bad("must be a string")
    try:
        return value.encode()
    except UnicodeEncodeError:  # a lone surrogate (the stdlib parser lets them through)
        raise _Bad("holds a lone UTF-16 surrogate") from None


def _int(value: Any, lo: int, hi: int) -> int:
    if type(value) is str:
        try:
            if "_" in value:
                raise ValueError
            value = int(value.strip(), 10)
        except ValueError:
            raise _Bad(f"must be an integer, got {value[:40]!r}") from None
    elif type(value) is float and value.is_integer():
        value = int(value)
    elif type(value) is not int:
        raise _Bad("must be an integer (a number or a decimal string)")
    if not lo <= value <= hi:
        raise _Bad(f"{value} is out of range [{lo}, {hi}]")
    return int(value)


def _double(value: Any) -> float:
    if type(value) is float or type(value) is int:
        return float(value)
    if type(value) is str:
        special = _SPECIAL.get(value)
        if special is not None:
            return special
        try:
            return float(value)
        except ValueError:
            pass
    raise _Bad("must be a number")


def _b64(value: Any) -> bytes:
    text = _str(value).replace(b"-", b"+").replace(b"_", b"/")
    try:
        return base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise _Bad("must be base64") from None


def _hex(value: Any) -> bytes:
    if type(value) is not str:
        raise _Bad("must be a hex string")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise _Bad(f"must be hex (OTLP/JSON ids are hex, not base64), got {value[:40]!r}") \
            from None


# --- attributes: the fast path ---------------------------------------------------------

_CACHE_MAX = 4096  # distinct attribute keys / short values remembered (bounded: hostile input)
_keys: dict[str, bytes] = {}
_short: dict[str, bytes] = {}


def _len(n: int) -> bytes:
    return _SMALL[n] if n < 128 else varint(n)


def _any(value: Any) -> bytes:
    """An AnyValue object's protobuf bytes (fast paths: one string or integer)."""
    if type(value) is dict and len(value) == 1:
        ((key, v),) = value.items()
        if key == "stringValue" and type(v) is str:
            cached = _short.get(v)
            if cached is not None:
                return cached
            try:
                data = v.encode()
            except UnicodeEncodeError:
                return _any_slow(value)
            out = b"\x0a" + _len(len(data)) + data
            if len(data) <= 64 and len(_short) < _CACHE_MAX:
                _short[v] = out
            return out
        if key == "intValue" and type(v) is int and -(2**63) <= v < 2**63:
            return b"\x18" + (_SMALL[v] if 0 <= v < 128 else varint(v))
    return _any_slow(value)


def _any_slow(value: Any) -> bytes:
    if type(value) is not dict:
        raise _Bad("must be an AnyValue object")
    out = b""
    for key, v in value.items():
        if v is None:
            continue
        try:
            if key == "stringValue" or key == "string_value":
                data = _str(v)
                out += b"\x0a" + varint(len(data)) + data
            elif key == "intValue" or key == "int_value":
                out += b"\x18" + varint(_int(v, -(2**63), 2**63 - 1))
            elif key == "doubleValue" or key == "double_value":
                out += b"\x21" + _pack_d(_double(v))
            elif key == "boolValue" or key == "bool_value":
                if type(v) is not bool:
                    raise _Bad("must be true or false")
                out += b"\x10\x01" if v else b"\x10\x00"
            elif key == "arrayValue" or key == "array_value":
                out += _ld(b"\x2a", b"".join(_ld(b"\x0a", _any(x)) for x in _values(v)))
            elif key == "kvlistValue" or key == "kvlist_value":
                out += _ld(b"\x32", _attrs(_values(v), b"\x0a"))
            elif key == "bytesValue" or key == "bytes_value":
                out += _ld(b"\x3a", _b64(v))
        except _Bad as exc:
            exc.where.append(key)
            raise
    return out


def _values(container: Any) -> list[Any]:
    if type(container) is not dict:
        raise _Bad("must be an object with a values list")
    values = container.get("values")
    if values is None:
        return []
    if type(values) is not list:
        raise _Bad("values must be a list")
    return values


def _attrs(items: Any, tag: bytes) -> bytes:
    """A repeated KeyValue field (``tag`` is its field's tag byte)."""
    if type(items) is not list:
        raise _Bad("must be a list of {key, value}")
    out: list[bytes] = []
    append, keys = out.append, _keys
    for i, kv in enumerate(items):
        try:
            if type(kv) is not dict:
                raise _Bad("must be a {key, value} object")
            key, value = kv.get("key"), kv.get("value")
            head = keys.get(key) if type(key) is str else None
            if head is None:
                head = b"" if key is None else _ld(b"\x0a", _str(key))
                if type(key) is str and len(keys) < _CACHE_MAX:
                    keys[key] = head
            if value is not None:
                data = _any(value)
                head += b"\x12" + _len(len(data)) + data
            append(tag + _len(len(head)) + head)
        except _Bad as exc:
            exc.where.append(f"[{i}]")
            raise
    return b"".join(out)


# --- every other message: driven by the official descriptors ---------------------------

Field = tuple[bytes, Callable[[Any], bytes], bool]  # tag, value encoder, repeated
_tables: dict[str, dict[str, Field]] = {}


def _encoder(fd: FieldDescriptor) -> tuple[int, Callable[[Any], bytes]]:
    """(wire type, value → payload bytes without the tag) of one field."""
    t = fd.type
    if t == _F.TYPE_MESSAGE:
        full = fd.message_type.full_name
        if full == _ANY:
            return 2, lambda v: _ld(b"", _any(v))
        table = _table(fd.message_type)
        return 2, lambda v: _ld(b"", _message(v, table))
    if t == _F.TYPE_STRING:
        return 2, lambda v: _ld(b"", _str(v))
    if t == _F.TYPE_BYTES:
        decode = _hex if fd.name in _HEX_IDS else _b64
        return 2, lambda v: _ld(b"", decode(v))
    if t == _F.TYPE_BOOL:
        return 0, _bool
    if t == _F.TYPE_DOUBLE:
        return 1, lambda v: _pack_d(_double(v))
    if t == _F.TYPE_FLOAT:
        return 5, lambda v: _pack_f(_double(v))
    lo, hi = _INT_RANGES[t]
    if t in (_F.TYPE_FIXED64, _F.TYPE_SFIXED64):
        return 1, lambda v: _pack_q(_int(v, lo, hi) % 2**64)
    if t == _F.TYPE_FIXED32:
        return 5, lambda v: _pack_i(_int(v, lo, hi))
    if t == _F.TYPE_ENUM:
        names = {v.name: v.number for v in fd.enum_type.values}
        return 0, lambda v: varint(names[v] if type(v) is str and v in names
                                   else _int(v, lo, hi))
    return 0, lambda v: varint(_int(v, lo, hi))


def _bool(value: Any) -> bytes:
    if type(value) is not bool:
        raise _Bad("must be true or false")
    return b"\x01" if value else b"\x00"


def _table(message: Descriptor) -> dict[str, Field]:
    table = _tables.get(message.full_name)
    if table is not None:
        return table
    table = _tables[message.full_name] = {}  # before recursing: messages nest
    for fd in message.fields:
        # protobuf 6+ has is_repeated (and no label); 4.x and 5.x have label
        repeated = fd.is_repeated if hasattr(fd, "is_repeated") else fd.label == 3
        if repeated and fd.type == _F.TYPE_MESSAGE and fd.message_type.full_name == _KEYVALUE:
            tag = varint(fd.number << 3 | 2)
            field: Field = (b"", lambda v, tag=tag: _attrs(v, tag), False)  # type: ignore[misc]
        else:
            wire, encode = _encoder(fd)
            field = (varint(fd.number << 3 | wire), encode, repeated)
        table[fd.json_name] = table[fd.name] = field
    return table


def _message(obj: Any, table: dict[str, Field]) -> bytes:
    if type(obj) is not dict:
        raise _Bad("must be an object")
    out = []
    for key, value in obj.items():
        field = table.get(key)
        if field is None or value is None:  # unknown fields are ignored; null = unset
            continue
        tag, encode, repeated = field
        try:
            if not repeated:
                out.append(tag + encode(value))
                continue
            if type(value) is not list:
                raise _Bad("must be a list")
            for i, item in enumerate(value):
                try:
                    out.append(tag + encode(item))
                except _Bad as exc:
                    exc.where.append(f"[{i}]")
                    raise
        except _Bad as exc:
            exc.where.append(key)
            raise
    return b"".join(out)


_REQUEST = _table(ExportTraceServiceRequest.DESCRIPTOR)


def _where(parts: list[str]) -> str:
    return "".join(p if p.startswith("[") else f".{p}" for p in reversed(parts)).lstrip(".")


def to_protobuf(body: bytes, table: dict[str, Field] = _REQUEST) -> bytes:
    """The protobuf bytes of an OTLP/JSON request body; RequestInvalid if it is not one."""
    try:
        data = _loads(body)
    except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError is a ValueError
        raise RequestInvalid(f"not valid JSON: {exc}") from None
    try:
        return _message(data, table)
    except _Bad as exc:
        where = _where(exc.where)
        raise RequestInvalid(f"not a valid OTLP/JSON request: {where or 'body'}: {exc}") \
            from None
    except RecursionError:
        raise RequestInvalid("not a valid OTLP/JSON request: nested too deeply") from None


def message_table(descriptor: Descriptor) -> dict[str, Field]:
    """The JSON table of another OTLP request (metrics, logs), for :func:`to_protobuf`."""
    return _table(descriptor)
