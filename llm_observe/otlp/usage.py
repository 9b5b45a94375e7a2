"""Token usage and reported cost of one span, under each dialect's cache-token rule.

LlmSpan's rule: ``prompt_tokens`` is the whole input, cached tokens included;
``cache_read_tokens`` / ``cache_write_tokens`` are the parts of it billed at cache
prices; ``reasoning_tokens`` is the part of ``completion_tokens`` spent reasoning.

Producers differ (docs/attribute-mapping.md, "Cache tokens: inclusive or exclusive"):

- *Inclusive*: the GenAI semconv (``gen_ai.usage.input_tokens`` SHOULD include cached
  tokens), OpenAI's usage, OpenInference, OpenLLMetry >= its cache support (it sums
  Anthropic's counts), Pydantic AI / Logfire and LiteLLM (both sum Anthropic's), the
  Vercel AI SDK >= 6 (``inputTokens.total``) and our own keys: read as sent
  (LiteLLM's cache counts from its usage object when it sets no cache keys).
- *Exclusive*: Anthropic's own usage (``input_tokens`` beside
  ``cache_read_input_tokens`` / ``cache_creation_input_tokens``), passed through by the
  Vercel AI SDK <= 5 (in ``ai.response.providerMetadata``), and Langfuse's
  ``usage_details`` buckets (``input`` beside ``input_cached_tokens`` ...): added up
  (:mod:`otlp.sdk_usage`).
- Any dialect: cached tokens larger than the input count cannot be inside it, so they
  were reported beside it (older OpenLLMetry, hand-written spans) and are added.
"""

from __future__ import annotations

from typing import Any

from llm_observe.otlp import sdk_usage
from llm_observe.otlp.plan import Plan
from llm_observe.otlp.values import SpanRejected, integer, small, usd_micro
from llm_observe.span import MAX_TOKENS

# (prompt, completion, cache read, cache write, reasoning, reported cost in micro-USD,
# TTFT in ms when the usage carried it: Langfuse's completion start). A plain tuple: it
# is built once per span on the receiver's hot path.
Usage = tuple[int, int, int, int, int, int | None, int | None]


def read(span: Any, a: Any, p: Plan, provider: str | None) -> Usage:
    """The span's usage under its dialect's rule (module docstring); SpanRejected
    naming the key for a count that is not a whole number in bounds."""
    prompt = integer(a, p.prompt, MAX_TOKENS) if p.prompt else None
    completion = integer(a, p.completion, MAX_TOKENS) if p.completion else None
    cache_read = integer(a, p.cache_read, MAX_TOKENS) if p.cache_read else 0
    cache_write = integer(a, p.cache_write, MAX_TOKENS) if p.cache_write else 0
    reasoning = integer(a, p.reasoning, MAX_TOKENS) if p.reasoning else 0
    reported = usd_micro(p.cost, small(a[p.cost])) if p.cost else None
    ttft = None
    if p.langfuse:
        found = sdk_usage.langfuse(span, a, p.langfuse)
        if found.tokens is not None:
            prompt, completion, cache_read, cache_write, reasoning = found.tokens
        reported = found.cost if found.cost is not None else reported
        ttft = found.ttft
    elif p.usage_object:
        details = sdk_usage.litellm_details(a)
        if details is not None:
            cache_read, cache_write = details[0], details[1]
            reasoning = reasoning or details[2]
    elif p.vercel and provider == "anthropic":
        raw = sdk_usage.vercel_anthropic(a)
        if raw is not None:  # Anthropic's own counts: the input is beside the cache
            prompt = raw[0] + raw[1] + raw[2]
            cache_read, cache_write = raw[1], raw[2]
    if completion is None and prompt is not None and p.total:
        total = integer(a, p.total, MAX_TOKENS)
        if total >= prompt:
            completion = total - prompt
    prompt = prompt or 0
    completion = completion or 0
    if cache_read + cache_write > prompt:
        # Reported beside (not inside) the input count, whatever the dialect says.
        prompt += cache_read + cache_write
    if prompt > MAX_TOKENS:
        raise SpanRejected("prompt tokens", f"with cached tokens exceed {MAX_TOKENS}")
    # A subset of the completion, never on top of it: a producer that counts reasoning
    # beside the output (Gemini's thoughts) is not priced for it twice.
    return (prompt, completion, cache_read, cache_write,
            reasoning if reasoning <= completion else completion, reported, ttft)

