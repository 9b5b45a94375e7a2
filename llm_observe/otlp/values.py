"""Attribute value readers for the dialect mapping: decode, validate, cache.

Each reader takes the span's attribute map and a key, and either returns a clean
value or raises :class:`SpanRejected` naming the key. Values that repeat across
spans (model and provider names, finish reasons, token counts) are decoded once
per distinct encoding: the caches are keyed by the encoded bytes and bounded
(cleared when full), since their contents come from senders.
"""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

from llm_observe import semconv as sc
from llm_observe.otlp.wire import decode_value
from llm_observe.providers import canonical_provider
from llm_observe.span import (
    MAX_ATTEMPTED_MODELS,
    MAX_COST_USD_MICRO,
    MAX_LABEL_CHARS,
    MAX_LATENCY_MS,
)


class SpanRejected(ValueError):
    """An LLM span with a value that cannot be trusted; ``key`` names the attribute."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(f"{key} {message}")


_unpack_double = struct.Struct("<d").unpack_from
_providers: dict[bytes, str] = {}  # encoded value -> canonical name, bounded below
_values: dict[bytes, Any] = {}  # small encoded values -> decoded (labels repeat a lot)
_VALUE_CACHE_BYTES = 96
_VALUE_CACHE_SIZE = 4096


def small(raw: bytes) -> Any:
    """decode_value with a bounded cache for short values (models, providers, reasons)."""
    value = _values.get(raw)
    if value is None:
        value = decode_value(raw)
        if len(raw) <= _VALUE_CACHE_BYTES and not isinstance(value, (list, dict)):
            if len(_values) >= _VALUE_CACHE_SIZE:
                _values.clear()
            _values[raw] = value
    return value


def describe(value: Any) -> str:
    """A short, type-naming description of a bad value for a rejection message."""
    shown = repr(value)
    return f"{type(value).__name__} {shown[:40]}{'...' if len(shown) > 40 else ''}"


_labels: dict[bytes, str | None] = {}  # encoded value -> validated label


def label(a: Any, key: str) -> str | None:
    """A string label (stripped, at most 256 chars), None when empty or unset."""
    raw = a[key]
    if raw in _labels:
        return _labels[raw]
    checked = _check_label(key, decode_value(raw))
    if len(raw) <= _VALUE_CACHE_BYTES:
        if len(_labels) >= _VALUE_CACHE_SIZE:
            _labels.clear()
        _labels[raw] = checked
    return checked


# C0 and C1 control characters and DEL: in a label they forge lines in logs and text
# expositions and split one model into look-alike series. Surrounding whitespace is
# stripped first, so only one left inside rejects the span: the REST door's rule
# (span._Validator; lone surrogates cannot get here, they are no valid UTF-8).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_text(key: str, value: str) -> str:
    """``value`` unless it holds a control character (then SpanRejected naming ``key``)."""
    if not value.isprintable() and (bad := _CONTROL.search(value)):  # isprintable: 1 C pass
        raise SpanRejected(key, f"must not contain a control character "
                                f"(U+{ord(bad.group()):04X})")
    return value


_services: dict[str, None] = {}  # resource service names already checked


def resource_service(name: str) -> str:
    """The resource's ``service.name`` (read and stripped by the walk), checked like a
    label; each distinct name once."""
    if name not in _services:
        if len(_services) >= _VALUE_CACHE_SIZE:
            _services.clear()
        _services[check_text(sc.SERVICE_NAME, name)] = None
    return name


def _check_label(key: str, value: Any) -> str | None:
    if isinstance(value, str):
        value = value.strip()
        if len(value) > MAX_LABEL_CHARS:
            raise SpanRejected(key, f"must be at most {MAX_LABEL_CHARS} characters")
        return check_text(key, value) or None
    if value is None:
        return None
    raise SpanRejected(key, f"must be a string, got {describe(value)}")


_ints: dict[bytes, int] = {}  # encoded non-negative ints -> value (counts repeat a lot)


def integer(a: Any, key: str, maximum: int) -> int:
    """A whole number from 0 to ``maximum`` (integral doubles accepted)."""
    raw = a[key]
    cached = _ints.get(raw)
    if cached is not None and cached <= maximum:
        return cached
    value = decode_value(raw)  # a name of its own: a compiled build checks a reused name's type
    if type(value) is int and 0 <= value <= maximum:
        if len(raw) <= _VALUE_CACHE_BYTES:  # an int with unknown fields appended is long
            if len(_ints) >= _VALUE_CACHE_SIZE:
                _ints.clear()
            _ints[raw] = value
        return value
    # JSON-born senders (JS SDKs) send whole numbers as doubles.
    if type(value) is float and value.is_integer() and 0 <= value <= maximum:
        return int(value)
    raise SpanRejected(key, f"must be an integer from 0 to {maximum}, got {describe(value)}")


def seconds_ms(a: Any, key: str, per_second: int = 1000) -> int:
    """A duration in seconds (int or double), as whole milliseconds; ``per_second=1``
    reads a duration already in milliseconds (the Vercel AI SDK's doubles)."""
    raw = a[key]
    if len(raw) == 9 and raw[0] == 0x21:  # a double: the usual shape (NaN fails the test)
        ms = _unpack_double(raw, 1)[0] * per_second
        if 0 <= ms <= MAX_LATENCY_MS:
            return int(ms + 0.5)
    value = decode_value(raw)
    if type(value) in (int, float) and math.isfinite(value) \
            and 0 <= value * per_second <= MAX_LATENCY_MS:
        return int(value * per_second + 0.5)
    unit = "seconds" if per_second == 1000 else "milliseconds"
    raise SpanRejected(key, f"must be {unit} from 0 to {MAX_LATENCY_MS // per_second}, "
                            f"got {describe(value)}")


def usd_micro(key: str, value: Any) -> int:
    """A cost in USD (int or double, as decoded) as whole micro-USD, within
    0..MAX_COST_USD_MICRO; anything else (NaN, negative, a string) is rejected."""
    if type(value) in (int, float) and math.isfinite(value) \
            and 0 <= value * 1e6 <= MAX_COST_USD_MICRO:
        return int(value * 1e6 + 0.5)
    raise SpanRejected(key, f"must be USD from 0 to {MAX_COST_USD_MICRO // 10**6}, "
                            f"got {describe(value)}")


def count(key: str, value: Any, maximum: int) -> int:
    """A whole number from 0 to ``maximum`` read from a decoded (JSON) value."""
    if type(value) is int and 0 <= value <= maximum:
        return value
    if type(value) is float and value.is_integer() and 0 <= value <= maximum:
        return int(value)
    raise SpanRejected(key, f"must be an integer from 0 to {maximum}, got {describe(value)}")


def finish_reason(a: Any, key: str) -> str | None:
    """A finish reason (first of an array), normalised to the spec's values."""
    raw = a[key]
    cached = _finish_cache.get(raw)
    if cached is not None:
        return cached
    value = decode_value(raw)  # a name of its own, as in integer()
    if isinstance(value, str) and value[:1] == "[":  # LiteLLM sends the array as JSON text
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            pass
    if isinstance(value, list):  # gen_ai.response.finish_reasons: one per choice
        value = value[0] if value else None
    if value is None:
        return None
    if not isinstance(value, str):
        raise SpanRejected(key, f"must be a string or string array, got {describe(value)}")
    reason = sc.normalize_finish_reason(check_text(key, value.strip()[:MAX_LABEL_CHARS]))
    if reason and len(raw) <= _VALUE_CACHE_BYTES:
        if len(_finish_cache) >= _VALUE_CACHE_SIZE:
            _finish_cache.clear()
        _finish_cache[raw] = reason
    return reason


_finish_cache: dict[bytes, str] = {}


def flag(a: Any, key: str) -> bool:
    """A boolean; any other type is rejected."""
    value = decode_value(a[key])
    if type(value) is bool:
        return value
    raise SpanRejected(key, f"must be a boolean, got {describe(value)}")


def models(a: Any, key: str) -> list[str]:
    """A list of at most 64 model names."""
    value = decode_value(a[key])
    if isinstance(value, list) and len(value) <= MAX_ATTEMPTED_MODELS and all(
            isinstance(m, str) and len(m) <= MAX_LABEL_CHARS for m in value):
        for m in value:
            check_text(key, m)
        return value
    raise SpanRejected(key, f"must be at most {MAX_ATTEMPTED_MODELS} strings, "
                            f"got {describe(value)}")


_requested: dict[bytes, str | None] = {}
_REQUESTED_CACHE_BYTES = 4096  # invocation parameters are a few hundred bytes


def requested_model(key: str, raw: bytes) -> str | None:
    """``model`` from OpenInference's JSON invocation parameters (cached: they repeat)."""
    if raw in _requested:
        return _requested[raw]
    model = None
    value = decode_value(raw)
    if isinstance(value, str):
        try:
            params = json.loads(value)
        except ValueError:
            params = None
        if isinstance(params, dict) and isinstance(params.get("model"), str):
            model = check_text(key, params["model"].strip()[:MAX_LABEL_CHARS]) or None
    if len(raw) <= _REQUESTED_CACHE_BYTES:  # the key is held: bound what a sender can pin
        if len(_requested) >= _VALUE_CACHE_SIZE:
            _requested.clear()
        _requested[raw] = model
    return model


def provider_name(a: Any, key: str) -> str | None:
    """Our canonical provider name for the value at ``key`` (cached per encoded value)."""
    raw = a[key]
    name = _providers.get(raw)
    if name is None:
        text = label(a, key)
        if text is None:
            return None
        name = canonical_provider(text) or text
        if len(_providers) < 1024:  # a bounded cache: values come from senders
            _providers[raw] = name
    return name
