"""Every span attribute key llm-observe reads or writes, in one place.

Sources:
- OpenTelemetry GenAI semantic conventions (``gen_ai.*``), including the
  deprecated keys still emitted by older instrumentations
  (https://opentelemetry.io/docs/specs/semconv/gen-ai/).
- Our own keys under ``llm_observe.*`` for the fields of the spec's span record
  (SERVICE_SPEC 2.1 / 2.2) that GenAI semconv has no key for.

Dialect-specific keys of other projects (OpenLLMetry, OpenInference, OpenLIT)
live in their own section at the end, read only by ``receiver/dialects.py``.
"""

from __future__ import annotations

from typing import Final

# --- OpenTelemetry resource -------------------------------------------------
SERVICE_NAME: Final = "service.name"

# --- OpenTelemetry GenAI semantic conventions --------------------------------
GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"  # current (semconv >= 1.37)
GEN_AI_SYSTEM: Final = "gen_ai.system"  # deprecated predecessor of provider.name
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_RESPONSE_ID: Final = "gen_ai.response.id"
GEN_AI_RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_PROMPT_TOKENS: Final = "gen_ai.usage.prompt_tokens"  # deprecated
GEN_AI_USAGE_COMPLETION_TOKENS: Final = "gen_ai.usage.completion_tokens"  # deprecated
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_CONVERSATION_ID: Final = "gen_ai.conversation.id"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: Final = "gen_ai.response.time_to_first_chunk"  # seconds
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
ERROR_TYPE: Final = "error.type"

# --- llm-observe's own keys (spec 2.1 / 2.2 fields without a GenAI key) ------
_P: Final = "llm_observe."
SERVICE: Final = _P + "service_name"
ENDPOINT: Final = _P + "endpoint"
SESSION_ID: Final = _P + "session_id"
ACTUAL_MODEL: Final = _P + "actual_model"
PROMPT_TOKENS: Final = _P + "prompt_tokens"
COMPLETION_TOKENS: Final = _P + "completion_tokens"
CACHE_READ_TOKENS: Final = _P + "cache_read_tokens"
CACHE_WRITE_TOKENS: Final = _P + "cache_write_tokens"
LATENCY_MS_TOTAL: Final = _P + "latency_ms_total"
LATENCY_MS_TTFT: Final = _P + "latency_ms_ttft"
FINISH_REASON: Final = _P + "finish_reason"
STATUS: Final = _P + "status"
RETRY_COUNT: Final = _P + "retry_count"
ATTEMPTED_MODELS: Final = _P + "attempted_models"
PROMPT_TEXT: Final = _P + "prompt"
COMPLETION_TEXT: Final = _P + "completion"
TOKEN_COUNT_METHOD: Final = _P + "token_count_method"
# Enrichment results added by the collector to the forwarded span.
COST_USD_MICRO: Final = _P + "cost_usd_micro"
PRICE_VERSION: Final = _P + "price_version"
PII_DETECTED: Final = _P + "pii_detected"
INJECTION_ATTEMPT: Final = _P + "injection_attempt"
IS_SAMPLED: Final = _P + "is_sampled"
PROMPT_HASH: Final = _P + "prompt_hash"
EMBEDDING: Final = _P + "embedding"
EMBEDDING_MODEL: Final = _P + "embedding_model"
TRACE_COST_USD_MICRO: Final = _P + "trace_cost_usd_micro"  # cumulative over a tool-call chain
TRANSITION: Final = _P + "tool_call_transition"
SPAN_KIND_LLM: Final = _P + "llm"  # marks a span as an LLM call when no GenAI key is present

# --- token_count_method values (ARCHITECTURE "Decisions") --------------------
METHOD_EXACT: Final = "exact"
METHOD_HEURISTIC: Final = "heuristic"


# --- status values (spec 2.1) -------------------------------------------------
STATUS_SUCCESS: Final = "success"
STATUS_ERROR: Final = "error"

# Provider-specific finish reasons mapped onto the spec's seen values
# (stop, length, content_filter, tool_calls). Anthropic stop_reason values from
# https://docs.anthropic.com/en/api/messages; Gemini finishReason values from
# the Vertex AI / Gemini API reference.
FINISH_REASON_ALIASES: Final[dict[str, str]] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    "refusal": "content_filter",
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "COMPLETE": "stop",  # Cohere
    "ERROR_TOXIC": "content_filter",  # Cohere
}


def normalize_finish_reason(value: str | None) -> str | None:
    """Map a provider's finish/stop reason onto the spec's vocabulary; unknown values pass."""
    if not value:
        return None
    return FINISH_REASON_ALIASES.get(value, FINISH_REASON_ALIASES.get(value.lower(), value))
