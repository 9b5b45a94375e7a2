"""Usage carried as JSON by two SDKs: Langfuse's details and the Vercel AI SDK's
Anthropic provider metadata.

Langfuse (langfuse-python ``langfuse/_client/attributes.py``): a generation's
``langfuse.observation.usage_details`` and ``cost_details`` are JSON objects and its
``completion_start_time`` a JSON datetime. The usage has three shapes:

- OpenAI's usage as the ``langfuse.openai`` wrapper passes it (``langfuse/openai.py``,
  ``_parse_usage``): ``prompt_tokens`` (cached inside, ``prompt_tokens_details.
  cached_tokens``), ``completion_tokens`` (``completion_tokens_details.reasoning_tokens``);
  the Responses API's ``input_tokens`` + ``input_tokens_details`` likewise inclusive;
- Anthropic's usage passed through: ``input_tokens`` beside ``cache_read_input_tokens``
  and ``cache_creation_input_tokens`` (exclusive);
- Langfuse's own buckets (``langfuse/langchain/CallbackHandler.py``, ``_parse_usage_model``
  subtracts every detail from ``input``/``output``): ``input`` beside ``input_*``,
  ``output`` beside ``output_*``, all exclusive, so they are added up.

LiteLLM's OTel callback (``litellm/integrations/opentelemetry.py``) in its default mode
sets no cache keys; its ``metadata.usage_object`` (a Python repr of LiteLLM's usage,
whose ``prompt_tokens`` already include Anthropic's cache: ``llms/anthropic/chat/
transformation.py``) carries the cache and reasoning counts.

Vercel AI SDK <= 5 (``packages/anthropic/src/anthropic-messages-language-model.ts``):
``ai.usage.inputTokens`` is Anthropic's ``input_tokens`` (cache reads beside it, cache
writes not reported); the raw usage is in ``ai.response.providerMetadata`` under
``anthropic.usage``. ai >= 6 reports the total (``convert-anthropic-usage.ts``) with
``ai.usage.inputTokenDetails.*``, so its spans never come here.
"""

from __future__ import annotations

import ast
import json
from datetime import datetime
from typing import Any, NamedTuple

from llm_observe import semconv as sc
from llm_observe.otlp.values import SpanRejected, count, usd_micro
from llm_observe.otlp.wire import decode_value
from llm_observe.span import MAX_LATENCY_MS, MAX_TOKENS

DETAILS_MAX_CHARS = 4096  # usage and cost details are a few dozen keys
METADATA_MAX_CHARS = 65_536  # provider metadata: skipped (not rejected) when larger
Tokens = tuple[int, int, int, int, int]  # prompt, completion, cache read, cache write, reasoning


class Found(NamedTuple):
    tokens: Tokens | None
    cost: int | None  # micro-USD
    ttft: int | None  # ms


def langfuse(span: Any, a: Any, keys: tuple[str, ...]) -> Found:
    """Tokens, reported cost and TTFT of a Langfuse generation (module docstring)."""
    tokens = cost = ttft = None
    if sc.LF_USAGE_DETAILS in keys:
        tokens = _langfuse_tokens(json_object(sc.LF_USAGE_DETAILS, a[sc.LF_USAGE_DETAILS]))
    if sc.LF_COST_DETAILS in keys:
        details = json_object(sc.LF_COST_DETAILS, a[sc.LF_COST_DETAILS])
        if "total" in details:
            cost = usd_micro(f"{sc.LF_COST_DETAILS}.total", details["total"])
        elif details:
            cost = sum(usd_micro(f"{sc.LF_COST_DETAILS}.{k}", v) for k, v in details.items())
    if sc.LF_COMPLETION_START_TIME in keys:
        ttft = _since_start(span, sc.LF_COMPLETION_START_TIME, a[sc.LF_COMPLETION_START_TIME])
    return Found(tokens, cost, ttft)


def _langfuse_tokens(d: dict[str, Any]) -> Tokens | None:
    key = sc.LF_USAGE_DETAILS

    def n(name: str, doc: dict[str, Any] = d, path: str = "") -> int:
        value = doc.get(name)
        return 0 if value is None else count(f"{key}.{path}{name}", value, MAX_TOKENS)

    def sub(name: str) -> dict[str, Any]:
        value = d.get(name)
        return value if isinstance(value, dict) else {}

    if "prompt_tokens" in d or "completion_tokens" in d:  # OpenAI chat: inclusive
        return (n("prompt_tokens"), n("completion_tokens"),
                n("cached_tokens", sub("prompt_tokens_details"), "prompt_tokens_details."), 0,
                n("reasoning_tokens", sub("completion_tokens_details"),
                  "completion_tokens_details."))
    if "input_tokens_details" in d or "output_tokens_details" in d:  # OpenAI Responses
        return (n("input_tokens"), n("output_tokens"),
                n("cached_tokens", sub("input_tokens_details"), "input_tokens_details."), 0,
                n("reasoning_tokens", sub("output_tokens_details"), "output_tokens_details."))
    if "input_tokens" in d or "output_tokens" in d:  # Anthropic's own: exclusive
        read, write = n("cache_read_input_tokens"), n("cache_creation_input_tokens")
        return (n("input_tokens") + read + write, n("output_tokens"), read, write, 0)
    if "input" not in d and "output" not in d:
        return None
    prompt, completion, read, write, reasoning = n("input"), n("output"), 0, 0, 0
    for name in d:  # Langfuse's buckets: every detail beside its side's total
        if name.startswith("input_") or "cache" in name:
            value = n(name)
            prompt += value
            if "cache_read" in name or "cached" in name:
                read += value
            elif "cache_creation" in name or "cache_write" in name:
                write += value
        elif name.startswith("output_"):
            value = n(name)
            completion += value
            reasoning += value if "reasoning" in name else 0
    return prompt, completion, read, write, reasoning


def _since_start(span: Any, key: str, raw: bytes) -> int:
    """Milliseconds from the span's start to a JSON datetime, which must lie in the span."""
    value = decode_value(raw)
    if isinstance(value, str) and len(value) <= 64:
        text = value.strip().strip('"')
        try:
            at = datetime.fromisoformat(text)
        except ValueError:
            at = None
        if at is not None and at.tzinfo is not None:
            at_ns = int(at.timestamp() * 1e6) * 1000
            start, end = span.start_time_unix_nano, span.end_time_unix_nano
            if start <= at_ns <= (end or at_ns) and at_ns - start <= MAX_LATENCY_MS * 10**6:
                return int((at_ns - start + 500_000) // 1_000_000)
            raise SpanRejected(key, "must lie within the span")
    raise SpanRejected(key, "must be an ISO 8601 datetime with a time zone")


def vercel_anthropic(a: Any) -> tuple[int, int, int] | None:
    """Anthropic's (input, cache read, cache creation) from the Vercel AI SDK's provider
    metadata, or None when the span does not carry them."""
    raw = a.get(sc.AI_RESPONSE_PROVIDER_METADATA)
    if raw is None or len(raw) > METADATA_MAX_CHARS:
        return None
    meta = json_object(sc.AI_RESPONSE_PROVIDER_METADATA, raw, METADATA_MAX_CHARS)
    anthropic = meta.get("anthropic")
    usage = anthropic.get("usage") if isinstance(anthropic, dict) else None
    if not isinstance(usage, dict) or "input_tokens" not in usage:
        return None
    key = f"{sc.AI_RESPONSE_PROVIDER_METADATA}.anthropic.usage."
    return tuple(0 if usage.get(name) is None else count(key + name, usage[name], MAX_TOKENS)
                 for name in ("input_tokens", "cache_read_input_tokens",
                              "cache_creation_input_tokens"))  # type: ignore[return-value]


def litellm_details(a: Any) -> tuple[int, int, int] | None:
    """(cache read, cache write, reasoning) from LiteLLM's usage object, or None when it
    is absent, too long or no literal (it is LiteLLM's own record, not the count)."""
    value = decode_value(a[sc.LITELLM_USAGE_OBJECT])
    if not isinstance(value, str) or not 2 <= len(value) <= DETAILS_MAX_CHARS:
        return None
    try:
        usage = ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None
    if not isinstance(usage, dict):
        return None
    prompt = usage.get("prompt_tokens_details") or {}
    output = usage.get("completion_tokens_details") or {}
    key = sc.LITELLM_USAGE_OBJECT + "."

    def n(doc: Any, *names: str) -> int:
        for name in names:
            if isinstance(doc, dict) and doc.get(name) is not None:
                return count(key + name, doc[name], MAX_TOKENS)
        return 0

    return (n(usage, "cache_read_input_tokens") or n(prompt, "cached_tokens"),
            n(usage, "cache_creation_input_tokens") or n(prompt, "cache_creation_tokens"),
            n(output, "reasoning_tokens"))


def json_object(key: str, raw: bytes, limit: int = DETAILS_MAX_CHARS) -> dict[str, Any]:
    """A JSON object carried as an attribute's string value (at most ``limit`` chars)."""
    value = decode_value(raw)
    if isinstance(value, str) and len(value) <= limit:
        try:
            doc = json.loads(value)
        except (ValueError, RecursionError):
            doc = None
        if isinstance(doc, dict):
            return doc
    raise SpanRejected(key, f"must be a JSON object of at most {limit} characters")
