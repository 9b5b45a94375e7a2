"""LlmSpan: the one record every stage passes on.

The fields of the spec's span record (SERVICE_SPEC 2.1) plus ids, text, the
enrichment results and per-span processing marks. Receivers and the REST doors
build LlmSpans; processors enrich them in place; exporters read them.

Token convention: ``prompt_tokens`` is the whole input, cached tokens included;
``cache_read_tokens`` and ``cache_write_tokens`` are the parts of it that the
provider billed at its cache prices (OpenAI reports cached tokens inside
prompt_tokens; Anthropic reports them beside input_tokens, so its mapping adds
them up). ``reasoning_tokens`` is the part of ``completion_tokens`` spent on reasoning
(never added on top). ``reported_cost_usd_micro`` is the cost the producer reported
itself, kept beside ours (``cost_usd_micro``) to count disagreements.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from llm_observe import semconv
from llm_observe.errors import FieldError, SpanValidationError
from llm_observe.providers.registry import canonical

# Bounds that reject absurd values while admitting every real call: 100M tokens is ~50x the
# largest context window on sale today; a day is longer than any provider's request timeout.
MAX_TOKENS = 100_000_000
MAX_LATENCY_MS = 86_400_000
MAX_RETRIES = 1_000
MAX_LABEL_CHARS = 256
MAX_TEXT_CHARS = 1_000_000
MAX_ATTEMPTED_MODELS = 64
MAX_COST_USD_MICRO = 10**12  # a reported cost over $1M for one call is garbage
STATUSES = frozenset({semconv.STATUS_SUCCESS, semconv.STATUS_ERROR})

# UUID4's version and variant bits, set on 128 random bits.
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_id() -> str:
    """A fresh span/trace id: a UUID4 as 32 hex chars.

    Drawn with ``random.getrandbits`` as the OTel SDK's RandomIdGenerator does (ids need
    uniqueness, not secrecy): ~0.4 µs against ~2.7 µs for ``uuid.uuid4().hex``, which the
    REST record doors paid twice per span.
    """
    return f"{(random.getrandbits(128) & _UUID4_CLEAR) | _UUID4_SET:032x}"


@dataclass(frozen=True, slots=True)
class TransitionSpan:
    """The intermediate span emitted after a ``tool_calls`` LLM span (spec 4.14).

    Ids are hex strings like LlmSpan's; ``span_id`` is derived from the parent's
    id, so a retried request yields the same transition span, not a second one.
    """

    trace_id: str
    parent_span_id: str
    span_id: str
    name: str
    start_time_ns: int
    end_time_ns: int
    attributes: dict[str, str | int | bool] = field(default_factory=dict)


@dataclass(slots=True)
class LlmSpan:
    """One LLM call. Mutable: processors fill the enrichment fields in place."""

    model: str
    provider: str
    service_name: str = "default"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms_total: int | None = None
    latency_ms_ttft: int | None = None
    finish_reason: str | None = None
    status: str = semconv.STATUS_SUCCESS
    pii_detected: bool = False
    injection_attempt: bool = False
    retry_count: int = 0
    attempted_models: list[str] = field(default_factory=list)
    # identity and grouping
    span_id: str = field(default_factory=new_id)
    trace_id: str = field(default_factory=new_id)
    parent_span_id: str | None = None
    endpoint: str | None = None
    session_id: str | None = None
    actual_model: str | None = None
    error_type: str | None = None
    start_time_ns: int | None = None
    # cached input (subsets of prompt_tokens, see module docstring)
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # optional content
    prompt_text: str | None = None
    completion_text: str | None = None
    # enrichment results
    token_count_method: str | None = None
    cost_usd_micro: int | None = None
    price_version: str | None = None
    is_sampled: bool = False
    # reported by the producer: reasoning part of completion_tokens, its own cost estimate
    reasoning_tokens: int = 0
    reported_cost_usd_micro: int | None = None
    # for the price structures (pricing/usage.py): parts of the counts above; the tier
    cache_write_1h_tokens: int = 0
    audio_input_tokens: int = 0
    audio_output_tokens: int = 0
    image_input_tokens: int = 0
    image_output_tokens: int = 0
    service_tier: str | None = None
    prompt_hash: str | None = None
    embedding: list[float] | None = None
    trace_cost_usd_micro: int | None = None
    findings: list[Any] = field(default_factory=list)
    # processing marks: names of processors that failed on this span, and what a stage
    # did not do in full (a text counted and scanned only up to the bound, ...)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # per side: characters scanned if cut at the bound; who wrote each part (scan/roles.py)
    scanned_chars: dict[str, int] = field(default_factory=dict)
    text_roles: dict[str, list[Any]] | None = None
    # the tool-call transition span this span hands over to (processors.toolchain)
    transition: TransitionSpan | None = None
    # where it came from ("api", "otlp", ...) and, for a span received in a request, its
    # (resource, scope, span) index there: exporters find the original through the batch
    source: str = "api"
    position: tuple[int, int, int] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    duplicate_of: str | None = None  # the span counted for this call, not this (agents.dedup)

    @property
    def has_retries(self) -> bool:
        return self.retry_count > 0

    @classmethod
    def from_dict(cls, data: Any) -> LlmSpan:
        """Build a span from a JSON object; raise SpanValidationError naming every bad field."""
        if not isinstance(data, Mapping):
            raise SpanValidationError([FieldError("$", "must be a JSON object")])
        v = _Validator(data)
        model = v.string("model", required=True)
        provider = v.string("provider", required=True)
        span = cls(
            model=model or "",
            provider=canonical(provider or ""),
            service_name=v.string("service_name") or "default",
            prompt_tokens=v.integer("prompt_tokens", MAX_TOKENS) or 0,
            completion_tokens=v.integer("completion_tokens", MAX_TOKENS) or 0,
            latency_ms_total=v.integer("latency_ms_total", MAX_LATENCY_MS),
            latency_ms_ttft=v.integer("latency_ms_ttft", MAX_LATENCY_MS),
            finish_reason=semconv.normalize_finish_reason(v.string("finish_reason")),
            status=v.choice("status", STATUSES) or semconv.STATUS_SUCCESS,
            pii_detected=v.boolean("pii_detected"),
            injection_attempt=v.boolean("injection_attempt"),
            retry_count=v.integer("retry_count", MAX_RETRIES) or 0,
            attempted_models=v.string_list("attempted_models", MAX_ATTEMPTED_MODELS),
            endpoint=v.string("endpoint"),
            session_id=v.string("session_id"),
            actual_model=v.string("actual_model"),
            error_type=v.string("error_type"),
            cache_read_tokens=v.integer("cache_read_tokens", MAX_TOKENS) or 0,
            cache_write_tokens=v.integer("cache_write_tokens", MAX_TOKENS) or 0,
            prompt_text=v.text("prompt"),
            completion_text=v.text("completion"),
        )
        for key in ("span_id", "trace_id", "parent_span_id", "service_tier"):
            value = v.string(key)
            if value is not None:
                setattr(span, key, value)
        for key in DETAIL_COUNTS:
            setattr(span, key, v.integer(key, MAX_TOKENS) or 0)
        for part, whole in (("cache_write_1h_tokens", "cache_write_tokens"),
                            ("reasoning_tokens", "completion_tokens")):
            if getattr(span, part) > getattr(span, whole):
                v.fail(part, f"is part of {whole} and cannot exceed it")
        if span.latency_ms_ttft is not None and span.latency_ms_total is not None \
                and span.latency_ms_ttft > span.latency_ms_total:
            v.fail("latency_ms_ttft", "must not exceed latency_ms_total")
        if span.cache_read_tokens + span.cache_write_tokens > span.prompt_tokens:
            v.fail("cache_read_tokens",
                   "cached tokens are part of prompt_tokens and cannot exceed it")
        if v.errors:
            raise SpanValidationError(v.errors)
        return span


DETAIL_COUNTS = ("reasoning_tokens", "cache_write_1h_tokens", "audio_input_tokens",  # parts
                 "audio_output_tokens", "image_input_tokens", "image_output_tokens")


class _Validator:
    """Collects every field error instead of stopping at the first."""

    __slots__ = ("data", "errors")
    # Label-like fields become metric labels and OTLP attributes: a control character
    # there breaks dashboards and log lines, and a lone surrogate cannot be encoded at all
    # (/metrics fails every scrape). Free text is exempt. Raw: mypyc refuses surrogate literals.
    UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")

    def __init__(self, data: Mapping[str, Any]) -> None:
        self.data = data
        self.errors: list[FieldError] = []

    def fail(self, name: str, message: str) -> None:
        self.errors.append(FieldError(name, message))

    def string(self, name: str, *, required: bool = False) -> str | None:
        value = self.data.get(name)
        if value is None:
            if required:
                self.fail(name, "is required")
            return None
        if not isinstance(value, str):
            self.fail(name, "must be a string")
            return None
        value = value.strip()
        if required and not value:
            self.fail(name, "must not be empty")
            return None
        if len(value) > MAX_LABEL_CHARS:
            self.fail(name, f"must be at most {MAX_LABEL_CHARS} characters")
            return None
        if bad := self.UNPRINTABLE.search(value):
            self.fail(name, self._unprintable(bad.group()))
            return None
        return value or None

    @staticmethod
    def _unprintable(char: str) -> str:
        kind = "a lone surrogate" if 0xD800 <= ord(char) <= 0xDFFF else "a control character"
        return f"must not contain {kind} (U+{ord(char):04X})"

    def text(self, name: str) -> str | None:
        value = self.data.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            self.fail(name, "must be a string")
            return None
        if len(value) > MAX_TEXT_CHARS:
            self.fail(name, f"must be at most {MAX_TEXT_CHARS} characters")
            return None
        return value

    def integer(self, name: str, maximum: int) -> int | None:
        value = self.data.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(name, "must be an integer")
            return None
        if value < 0:
            self.fail(name, "must be >= 0")
            return None
        if value > maximum:
            self.fail(name, f"must be <= {maximum}")
            return None
        return value

    def boolean(self, name: str) -> bool:
        value = self.data.get(name)
        if value is None:
            return False
        if not isinstance(value, bool):
            self.fail(name, "must be a boolean")
            return False
        return value

    def choice(self, name: str, allowed: frozenset[str]) -> str | None:
        value = self.string(name)
        if value is not None and value not in allowed:
            self.fail(name, f"must be one of {sorted(allowed)}")
            return None
        return value

    def string_list(self, name: str, max_items: int) -> list[str]:
        value = self.data.get(name)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            self.fail(name, "must be a list of strings")
            return []
        if len(value) > max_items:
            self.fail(name, f"must have at most {max_items} items")
            return []
        if any(len(x) > MAX_LABEL_CHARS for x in value):
            self.fail(name, f"items must be at most {MAX_LABEL_CHARS} characters")
            return []
        for index, item in enumerate(value):
            if bad := self.UNPRINTABLE.search(item):
                self.fail(f"{name}[{index}]", self._unprintable(bad.group()))
                return []
        return list(value)
