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

import gc
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from llm_observe.otlp.jsonvalues import (
    SMALL,
    Bad,
    any_value,
    attributes,
    b64,
    double,
    hexid,
    integer,
    ld,
    string,
)
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
_pack_d, _pack_f = struct.Struct("<d").pack, struct.Struct("<f").pack
_pack_q, _pack_i = struct.Struct("<Q").pack, struct.Struct("<I").pack
_INT_RANGES = {_F.TYPE_INT32: (-(2**31), 2**31 - 1), _F.TYPE_ENUM: (-(2**31), 2**31 - 1),
               _F.TYPE_UINT32: (0, 2**32 - 1), _F.TYPE_INT64: (-(2**63), 2**63 - 1),
               _F.TYPE_UINT64: (0, 2**64 - 1), _F.TYPE_FIXED64: (0, 2**64 - 1),
               _F.TYPE_SFIXED64: (-(2**63), 2**63 - 1), _F.TYPE_FIXED32: (0, 2**32 - 1),
               _F.TYPE_SFIXED32: (-(2**31), 2**31 - 1), _F.TYPE_SINT32: (-(2**31), 2**31 - 1),
               _F.TYPE_SINT64: (-(2**63), 2**63 - 1)}


# --- every other message: driven by the official descriptors ---------------------------

# tag, value encoder, repeated, the message's own table (None for scalars and attributes)
Field = tuple[bytes, Callable[[Any], bytes], bool, "dict[str, Any] | None"]
_tables: dict[str, dict[str, Field]] = {}


def _encoder(fd: FieldDescriptor) -> tuple[int, Callable[[Any], bytes]]:
    """(wire type, value → payload bytes without the tag) of one field."""
    t = fd.type
    if t == _F.TYPE_MESSAGE:
        full = fd.message_type.full_name
        if full == _ANY:
            return 2, lambda v: ld(b"", any_value(v))
        table = _table(fd.message_type)
        return 2, lambda v: ld(b"", _message(v, table))
    if t == _F.TYPE_STRING:
        return 2, _string
    if t == _F.TYPE_BYTES:
        if fd.name in _HEX_IDS:
            return 2, _hex
        return 2, lambda v: ld(b"", b64(v))
    if t == _F.TYPE_BOOL:
        return 0, _bool
    if t == _F.TYPE_DOUBLE:
        return 1, lambda v: _pack_d(double(v))
    if t == _F.TYPE_FLOAT:
        return 5, lambda v: _pack_f(double(v))
    lo, hi = _INT_RANGES[t]
    if t == _F.TYPE_FIXED64:  # the timestamps: a decimal string, as the mapping says
        return 1, lambda v: _pack_q(int(v) if type(v) is str and len(v) < 20 and v.isascii()
                                    and v.isdigit() else integer(v, lo, hi))
    if t == _F.TYPE_SFIXED64:
        return 1, lambda v: _pack_q(integer(v, lo, hi) % 2**64)
    if t in (_F.TYPE_FIXED32, _F.TYPE_SFIXED32):
        return 5, lambda v: _pack_i(integer(v, lo, hi) % 2**32)
    if t in (_F.TYPE_SINT32, _F.TYPE_SINT64):  # zigzag
        return 0, lambda v: varint(_zigzag(integer(v, lo, hi)))
    if t == _F.TYPE_ENUM:
        names = {v.name: v.number for v in fd.enum_type.values}
        return 0, lambda v: varint(names[v] if type(v) is str and v in names
                                   else integer(v, lo, hi))
    return 0, lambda v: varint(integer(v, lo, hi))


def _string(value: Any) -> bytes:
    data = string(value)
    n = len(data)
    return (SMALL[n] if n < 128 else varint(n)) + data


def _hex(value: Any) -> bytes:
    data = hexid(value)
    n = len(data)
    return (SMALL[n] if n < 128 else varint(n)) + data


def _zigzag(n: int) -> int:
    return n * 2 if n >= 0 else -n * 2 - 1


def _bool(value: Any) -> bytes:
    if type(value) is not bool:
        raise Bad("must be true or false")
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
            field: Field = (b"", lambda v, tag=tag: attributes(v, tag),  # type: ignore[misc]
                            False, None)
        else:
            wire, encode = _encoder(fd)
            sub = (_table(fd.message_type) if fd.type == _F.TYPE_MESSAGE
                   and fd.message_type.full_name != _ANY else None)
            field = (varint(fd.number << 3 | wire), encode, repeated, sub)
        table[fd.json_name] = table[fd.name] = field
    return table


def _message(obj: Any, table: dict[str, Field]) -> bytes:
    if type(obj) is not dict:
        raise Bad("must be an object")
    out: list[bytes] = []
    append = out.append
    for key, value in obj.items():
        field = table.get(key)
        if field is not None and value is not None:  # unknown fields are ignored
            try:
                if field[2]:
                    encode_field(out, field, value)
                else:
                    append(field[0] + field[1](value))
            except Bad as exc:
                exc.where.append(key)
                raise
    return b"".join(out)


def encode_field(out: list[bytes], field: Field, value: Any) -> None:
    """Append one field's encoding (every item of a repeated one) to ``out``; null = unset."""
    if value is None:
        return
    tag, encode, repeated, _ = field
    if not repeated:
        out.append(tag + encode(value))
        return
    if type(value) is not list:
        raise Bad("must be a list")
    for i, item in enumerate(value):
        try:
            out.append(tag + encode(item))
        except Bad as exc:
            exc.where.append(f"[{i}]")
            raise


_REQUEST = _table(ExportTraceServiceRequest.DESCRIPTOR)
STREAM_MIN_BYTES = 1024 * 1024  # ~1,000 spans: orjson takes them in a few ms


_gc_lock = threading.Lock()
_gc_users = 0
_gc_was_enabled = True


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while a JSON tree is built and encoded.

    A parsed JSON tree holds no reference cycles (refcounting frees it whole), but the
    ~50,000 containers of a 512-span request set off collections that re-traverse the
    growing tree: measured, ``orjson.loads`` cost 20 µs a span with collections and 7 µs
    without. Nested and concurrent users share one pause; the collector is switched back
    on by the last one out, and only if it was on before the first came in.
    """
    global _gc_users, _gc_was_enabled
    with _gc_lock:
        if _gc_users == 0:
            _gc_was_enabled = gc.isenabled()
            gc.disable()
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_was_enabled:
                gc.enable()


def where_of(parts: list[str]) -> str:
    return "".join(p if p.startswith("[") else f".{p}" for p in reversed(parts)).lstrip(".")


def parse(body: bytes) -> Any:
    """The JSON tree of a body (call under :func:`gc_paused`); RequestInvalid if not JSON."""
    try:
        return _loads(body)
    except (ValueError, RecursionError) as exc:  # orjson.JSONDecodeError: ValueError
        raise RequestInvalid(f"not valid JSON: {exc}") from None


def invalid(exc: Bad) -> RequestInvalid:
    """The RequestInvalid naming where a bad value sat."""
    where = where_of(exc.where)
    return RequestInvalid(f"not a valid OTLP/JSON request: {where or 'body'}: {exc}")


NESTED_TOO_DEEPLY = "not a valid OTLP/JSON request: nested too deeply"


def to_protobuf(body: bytes, table: dict[str, Field] = _REQUEST) -> bytes:
    """The protobuf bytes of an OTLP/JSON request body; RequestInvalid if it is not one.

    A body over STREAM_MIN_BYTES is parsed piece by piece (:mod:`.jsonstream`): one
    ``loads`` of 16 MiB holds the GIL, and so the collector's event loop, for a second.
    """
    try:
        with gc_paused():
            if len(body) > STREAM_MIN_BYTES:
                from llm_observe.otlp.jsonstream import stream

                return stream(body, table)
            # the tree is freed before the collector is back on (it would be traversed)
            return _message(parse(body), table)
    except Bad as exc:
        raise invalid(exc) from None
    except RecursionError:
        raise RequestInvalid(NESTED_TOO_DEEPLY) from None


def message_table(descriptor: Descriptor) -> dict[str, Field]:
    """The JSON table of another OTLP request (metrics, logs), for :func:`to_protobuf`."""
    return _table(descriptor)
