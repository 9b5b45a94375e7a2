"""OTLP/JSON values: the scalars and the attribute lists, as protobuf bytes.

The helpers of :mod:`llm_observe.otlp.jsonwire`. Attribute lists are most of a request,
so ``KeyValue`` / ``AnyValue`` have a hand-written path (attribute keys and short string
values are encoded once and remembered, bounded); each helper raises :class:`Bad` for a
value of the wrong JSON type or range, and the caller adds where it sat.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

from llm_observe.otlp.wire import varint

SMALL = [bytes((n,)) for n in range(128)]  # one-byte varints
_pack_d = struct.Struct("<d").pack
_SPECIAL = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class Bad(Exception):
    """A bad value; ``where`` collects the path on the way up (no cost when all is well)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.where: list[str] = []


def ld(tag: bytes, payload: bytes) -> bytes:
    n = len(payload)
    return tag + (SMALL[n] if n < 128 else varint(n)) + payload


def string(value: Any) -> bytes:
    if type(value) is not str:
        raise Bad("must be a string")
    try:
        return value.encode()
    except UnicodeEncodeError:  # a lone surrogate (the stdlib parser lets them through)
        raise Bad("holds a lone UTF-16 surrogate") from None


def integer(value: Any, lo: int, hi: int) -> int:
    if type(value) is str:
        try:
            if "_" in value:
                raise ValueError
            value = int(value.strip(), 10)
        except ValueError:
            raise Bad(f"must be an integer, got {value[:40]!r}") from None
    elif type(value) is float and value.is_integer():
        value = int(value)
    elif type(value) is not int:
        raise Bad("must be an integer (a number or a decimal string)")
    if not lo <= value <= hi:
        raise Bad(f"{value} is out of range [{lo}, {hi}]")
    return int(value)


def double(value: Any) -> float:
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
    raise Bad("must be a number")


def b64(value: Any) -> bytes:
    text = string(value).replace(b"-", b"+").replace(b"_", b"/")
    try:
        return base64.b64decode(text + b"=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        raise Bad("must be base64") from None


def hexid(value: Any) -> bytes:
    if type(value) is not str:
        raise Bad("must be a hex string")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise Bad(f"must be hex (OTLP/JSON ids are hex, not base64), got {value[:40]!r}") \
            from None


# --- attributes: the fast path ---------------------------------------------------------

_CACHE_MAX = 4096  # distinct attribute keys / short values remembered (bounded: hostile input)
_keys: dict[str, bytes] = {}
_short: dict[str, bytes] = {}
_pairs: dict[bytes, dict[tuple[str, str], bytes]] = {}


def length(n: int) -> bytes:
    return SMALL[n] if n < 128 else varint(n)


def any_value(value: Any) -> bytes:
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
            out = b"\x0a" + length(len(data)) + data
            if len(data) <= 64 and len(_short) < _CACHE_MAX:
                _short[v] = out
            return out
        if key == "intValue":  # int64: a decimal string by the proto3 JSON mapping
            if type(v) is str and len(v) < 19 and v.isascii() and v.isdigit():
                n = int(v)
                return b"\x18" + (SMALL[n] if n < 128 else varint(n))
            if type(v) is int and -(2**63) <= v < 2**63:
                return b"\x18" + (SMALL[v] if 0 <= v < 128 else varint(v))
        elif key == "doubleValue" and type(v) is float:
            return b"\x21" + _pack_d(v)
    return _any_slow(value)


def _any_slow(value: Any) -> bytes:
    if type(value) is not dict:
        raise Bad("must be an AnyValue object")
    out = b""
    for key, v in value.items():
        if v is None:
            continue
        try:
            if key == "stringValue" or key == "string_value":
                data = string(v)
                out += b"\x0a" + varint(len(data)) + data
            elif key == "intValue" or key == "int_value":
                out += b"\x18" + varint(integer(v, -(2**63), 2**63 - 1))
            elif key == "doubleValue" or key == "double_value":
                out += b"\x21" + _pack_d(double(v))
            elif key == "boolValue" or key == "bool_value":
                if type(v) is not bool:
                    raise Bad("must be true or false")
                out += b"\x10\x01" if v else b"\x10\x00"
            elif key == "arrayValue" or key == "array_value":
                out += ld(b"\x2a", b"".join(ld(b"\x0a", any_value(x)) for x in _values(v)))
            elif key == "kvlistValue" or key == "kvlist_value":
                out += ld(b"\x32", attributes(_values(v), b"\x0a"))
            elif key == "bytesValue" or key == "bytes_value":
                out += ld(b"\x3a", b64(v))
        except Bad as exc:
            exc.where.append(key)
            raise
    return out


def _values(container: Any) -> list[Any]:
    if type(container) is not dict:
        raise Bad("must be an object with a values list")
    values = container.get("values")
    if values is None:
        return []
    if type(values) is not list:
        raise Bad("values must be a list")
    return values


def attributes(items: Any, tag: bytes) -> bytes:
    """A repeated KeyValue field (``tag`` is its field's tag byte).

    Most attributes are ``{"key": k, "value": {"stringValue" | "intValue" | "doubleValue":
    v}}``: those are encoded inline here (about half the cost of the general path, which
    takes every other shape and names what is wrong with a bad one).
    """
    if type(items) is not list:
        raise Bad("must be a list of {key, value}")
    out: list[bytes] = []
    append, heads, small = out.append, _keys, SMALL
    pairs = _pairs.get(tag)  # entries start with the field's tag: one cache per tag
    if pairs is None:
        pairs = _pairs[tag] = {}
    for i, kv in enumerate(items):
        av = None
        if type(kv) is dict:
            key, value = kv.get("key"), kv.get("value")
            if type(value) is dict and len(value) == 1 and type(key) is str:
                s = value.get("stringValue")
                if type(s) is str:
                    # the same short string under the same key (model, provider ...): the
                    # whole entry was encoded before
                    entry = pairs.get((key, s))
                    if entry is not None:
                        append(entry)
                        continue
                    if s.isascii():  # else: the general path (it checks for surrogates)
                        data = s.encode()
                        n = len(data)
                        av = b"\x0a" + (small[n] if n < 128 else varint(n)) + data
                elif s is None:
                    v = value.get("intValue")
                    if v is not None:
                        if type(v) is str and len(v) < 19 and v.isascii() and v.isdigit():
                            n = int(v)
                            av = b"\x18" + (small[n] if n < 128 else varint(n))
                    else:
                        v = value.get("doubleValue")
                        if type(v) is float:
                            av = b"\x21" + _pack_d(v)
                if av is not None:
                    head = heads.get(key)
                    if head is None and key.isascii():
                        head = b"\x0a" + length(len(key)) + key.encode() + b"\x12"
                        if len(heads) < _CACHE_MAX:
                            heads[key] = head
                    if head is not None:
                        n = len(av)
                        lv = small[n] if n < 128 else varint(n)
                        n += len(head) + len(lv)
                        entry = tag + (small[n] if n < 128 else varint(n)) + head + lv + av
                        if type(s) is str and n <= 80 and len(pairs) < _CACHE_MAX:
                            pairs[(key, s)] = entry
                        append(entry)
                        continue
        try:
            append(_key_value(kv, tag))
        except Bad as exc:
            exc.where.append(f"[{i}]")
            raise
    return b"".join(out)


def _key_value(kv: Any, tag: bytes) -> bytes:
    """One KeyValue of any shape (the general path of :func:`attributes`)."""
    if type(kv) is not dict:
        raise Bad("must be a {key, value} object")
    key, value = kv.get("key"), kv.get("value")
    head = b"" if key is None else ld(b"\x0a", string(key))
    if value is not None:
        data = any_value(value)
        head += b"\x12" + length(len(data)) + data
    return tag + length(len(head)) + head
