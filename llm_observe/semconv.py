"""Every span attribute key llm-observe reads or writes, in one place.

Sources:
- OpenTelemetry GenAI semantic conventions (``gen_ai.*``), including the
  deprecated keys still emitted by older instrumentations
  (https://opentelemetry.io/docs/specs/semconv/gen-ai/).
- Our own keys under ``llm_observe.*`` for the fields of the spec's span record
  (SERVICE_SPEC 2.1 / 2.2) that GenAI semconv has no key for.

Dialect-specific keys of other projects (OpenLLMetry, OpenInference, OpenLIT)
live in their own section at the end, read only by the dialect mapping
(``otlp/plan.py``, ``otlp/usage.py``, ``otlp/sdk_usage.py``).
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
# semantic-conventions-genai#440 renamed cache_creation to cache_write (both are read).
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS: Final = "gen_ai.usage.cache_write.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
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
# Our SDK: "role:start" per message of PROMPT_TEXT (otlp/textroles.py reads it).
PROMPT_ROLES: Final = _P + "prompt.roles"
TOKEN_COUNT_METHOD: Final = _P + "token_count_method"
# Enrichment results added by the collector to the forwarded span.
COST_USD_MICRO: Final = _P + "cost_usd_micro"
PRICE_VERSION: Final = _P + "price_version"
PII_DETECTED: Final = _P + "pii_detected"
INJECTION_ATTEMPT: Final = _P + "injection_attempt"
IS_SAMPLED: Final = _P + "is_sampled"
# on the agent (else workflow) span whose tool, retriever or MCP output was flagged as an
# injection attempt (agents/consumers.py)
TOOL_OUTPUT_FLAGGED: Final = _P + "tool_output_flagged"
# counts the price structures need (docs/pricing.md); subsets of the input/output counts
CACHE_WRITE_1H_TOKENS: Final = _P + "cache_write_1h_tokens"  # part of the cache writes
REASONING_TOKENS: Final = _P + "reasoning_tokens"
AUDIO_INPUT_TOKENS: Final = _P + "audio_input_tokens"
AUDIO_OUTPUT_TOKENS: Final = _P + "audio_output_tokens"
IMAGE_INPUT_TOKENS: Final = _P + "image_input_tokens"
IMAGE_OUTPUT_TOKENS: Final = _P + "image_output_tokens"
SERVICE_TIER: Final = _P + "service_tier"  # as the provider reported it on the response
# OpenAI's service tier: semantic-conventions registry `openai.response.service_tier`
# (before: `gen_ai.openai.response.service_tier`); OpenInference's audio token details
OPENAI_RESPONSE_SERVICE_TIER: Final = "openai.response.service_tier"
GEN_AI_OPENAI_RESPONSE_SERVICE_TIER: Final = "gen_ai.openai.response.service_tier"
OI_PROMPT_AUDIO_TOKENS: Final = "llm.token_count.prompt_details.audio"
OI_COMPLETION_AUDIO_TOKENS: Final = "llm.token_count.completion_details.audio"
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
    "tool-calls": "tool_calls",  # Vercel AI SDK (LanguageModel finish reasons)
    # GenAI semconv gen_ai.response.finish_reasons / output message finish_reason
    # ("tool_call"); OpenAI's is "tool_calls": one reason, one label value
    "tool_call": "tool_calls",
    "content-filter": "content_filter",
}


FINISH_TOOL_CALLS: Final = "tool_calls"


def normalize_finish_reason(value: str | None) -> str | None:
    """Map a provider's finish/stop reason onto the spec's vocabulary; unknown values pass."""
    if not value:
        return None
    return FINISH_REASON_ALIASES.get(value, FINISH_REASON_ALIASES.get(value.lower(), value))


# --- Instrumentation (llm_observe/instrument/) --------------------------------
# Free-form set_metadata(key, value) keys that have no key above land under this
# prefix: set_metadata("tenant", "acme") -> "llm_observe.metadata.tenant".
METADATA_PREFIX: Final = _P + "metadata."
# Name of the instrumentation scope (tracer) of every span the library emits.
INSTRUMENTATION_SCOPE: Final = "llm_observe.instrument"
# Environment switch for prompt/completion capture on spans ("false" turns it off).
ENV_CAPTURE_CONTENT: Final = "LLM_OBSERVE_CAPTURE_CONTENT"


# --- OTLP receiver: dialect keys (otlp/plan.py; table in docs/attribute-mapping.md) ---
# OTel GenAI semconv, older and extra keys
# (https://opentelemetry.io/docs/specs/semconv/registry/attributes/gen-ai/)
GEN_AI_USAGE_TOTAL_TOKENS: Final = "gen_ai.usage.total_tokens"
GEN_AI_SYSTEM_INSTRUCTIONS: Final = "gen_ai.system_instructions"
# Semconv <= 1.27 put content in span events carrying these attributes; OpenLIT
# still does, and newer OpenLIT versions also set them as span attributes.
GEN_AI_CONTENT_PROMPT_EVENT: Final = "gen_ai.content.prompt"
GEN_AI_CONTENT_COMPLETION_EVENT: Final = "gen_ai.content.completion"
GEN_AI_PROMPT: Final = "gen_ai.prompt"
GEN_AI_COMPLETION: Final = "gen_ai.completion"

# OpenLLMetry (traceloop/openllmetry, packages/opentelemetry-semantic-conventions-ai,
# semconv_ai/__init__.py and its MIGRATION.md v0.4 -> v0.5)
OLLM_USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read_input_tokens"  # <= 0.4
OLLM_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation_input_tokens"
OLLM_PROMPT_PREFIX: Final = "gen_ai.prompt."  # gen_ai.prompt.{i}.content / .role
OLLM_COMPLETION_PREFIX: Final = "gen_ai.completion."  # gen_ai.completion.{i}.content
OLLM_RESPONSE_FINISH_REASON: Final = "llm.response.finish_reason"
OLLM_GEN_AI_RESPONSE_FINISH_REASON: Final = "gen_ai.response.finish_reason"
OLLM_COMPLETION_CHUNK_EVENT: Final = "llm.content.completion.chunk"  # one event per chunk
OLLM_GEN_AI_COMPLETION_CHUNK_EVENT: Final = "gen_ai.content.completion.chunk"  # >= 0.5
OLLM_REQUEST_TYPE: Final = "llm.request.type"
OLLM_SPAN_KIND: Final = "traceloop.span.kind"
# The llm.* keys of older OpenLLMetry releases (and tools that copied them).
LLM_USAGE_PROMPT_TOKENS: Final = "llm.usage.prompt_tokens"
LLM_USAGE_COMPLETION_TOKENS: Final = "llm.usage.completion_tokens"
LLM_USAGE_INPUT_TOKENS: Final = "llm.usage.input_tokens"
LLM_USAGE_OUTPUT_TOKENS: Final = "llm.usage.output_tokens"
LLM_USAGE_TOTAL_TOKENS: Final = "llm.usage.total_tokens"
LLM_USAGE_CACHE_READ_INPUT_TOKENS: Final = "llm.usage.cache_read_input_tokens"
LLM_USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "llm.usage.cache_creation_input_tokens"
LLM_VENDOR: Final = "llm.vendor"
LLM_REQUEST_MODEL: Final = "llm.request.model"
LLM_RESPONSE_MODEL: Final = "llm.response.model"

# OpenInference (Arize-ai/openinference, openinference-semantic-conventions
# src/openinference/semconv/trace/__init__.py; spec/semantic_conventions.md)
OI_SPAN_KIND: Final = "openinference.span.kind"
OI_SPAN_KIND_LLM: Final = "LLM"
OI_MODEL_NAME: Final = "llm.model_name"
OI_REQUEST_MODEL_NAME: Final = "llm.request.model_name"
OI_RESPONSE_MODEL_NAME: Final = "llm.response.model_name"
OI_PROVIDER: Final = "llm.provider"
OI_SYSTEM: Final = "llm.system"
OI_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
OI_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
OI_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"
OI_TOKEN_COUNT_CACHE_READ: Final = "llm.token_count.prompt_details.cache_read"
OI_TOKEN_COUNT_CACHE_WRITE: Final = "llm.token_count.prompt_details.cache_write"
OI_FINISH_REASON: Final = "llm.finish_reason"
OI_INPUT_MESSAGES_PREFIX: Final = "llm.input_messages."  # {i}.message.content / .role
OI_OUTPUT_MESSAGES_PREFIX: Final = "llm.output_messages."
OI_MESSAGE_CONTENT_SUFFIX: Final = ".message.content"
OI_INPUT_VALUE: Final = "input.value"
OI_INPUT_MIME_TYPE: Final = "input.mime_type"
OI_OUTPUT_VALUE: Final = "output.value"
OI_OUTPUT_MIME_TYPE: Final = "output.mime_type"
OI_SESSION_ID: Final = "session.id"
OI_INVOCATION_PARAMETERS: Final = "llm.invocation_parameters"  # JSON; "model" = requested
OI_FIRST_TOKEN_EVENT: Final = "First Token Stream Event"

# OpenLIT (openlit/openlit, sdk/python/src/openlit/semcov/__init__.py)
OPENLIT_SERVER_TTFT: Final = "gen_ai.server.time_to_first_token"  # seconds
OPENLIT_USAGE_COST: Final = "gen_ai.usage.cost"  # USD, their own estimate: the reported cost
OI_COST_TOTAL: Final = "llm.cost.total"  # OpenInference, USD
OI_TOKEN_COUNT_REASONING: Final = "llm.token_count.completion_details.reasoning"

# Pydantic AI (pydantic_ai_slim/pydantic_ai/_instrumentation.py, usage.py) and Logfire
# (logfire/_internal/integrations/llm_providers/usage.py): their genai-prices cost, USD.
OPERATION_COST: Final = "operation.cost"
PYDANTIC_TIME_TO_FIRST_CHUNK: Final = "gen_ai.client.operation.time_to_first_chunk"  # s
PYDANTIC_REASONING_TOKENS: Final = "gen_ai.usage.details.reasoning_tokens"
LOGFIRE_SPAN_TYPE: Final = "logfire.span_type"  # "span", "log", "pending_span"

# LiteLLM's OTel callback (litellm/integrations/opentelemetry.py): cost_breakdown keys.
LITELLM_COST_TOTAL: Final = "gen_ai.cost.total_cost"  # USD
# Its usage as a Python repr (cache and reasoning counts, which the default mode does
# not set as gen_ai.usage.* keys).
LITELLM_USAGE_OBJECT: Final = "metadata.usage_object"

# Vercel AI SDK (vercel/ai packages/otel/src/legacy-open-telemetry.ts; ai <= 6
# packages/ai/src/generate-text/stream-text.ts, ai 4 packages/ai/core/generate-text).
AI_MODEL_ID: Final = "ai.model.id"
AI_MODEL_PROVIDER: Final = "ai.model.provider"
AI_RESPONSE_MODEL: Final = "ai.response.model"
AI_USAGE_PROMPT_TOKENS: Final = "ai.usage.promptTokens"  # ai 4
AI_USAGE_COMPLETION_TOKENS: Final = "ai.usage.completionTokens"  # ai 4
AI_USAGE_INPUT_TOKENS: Final = "ai.usage.inputTokens"  # ai >= 5
AI_USAGE_OUTPUT_TOKENS: Final = "ai.usage.outputTokens"
AI_USAGE_TOTAL_TOKENS: Final = "ai.usage.totalTokens"
AI_USAGE_CACHED_INPUT_TOKENS: Final = "ai.usage.cachedInputTokens"  # ai >= 5
AI_USAGE_REASONING_TOKENS: Final = "ai.usage.reasoningTokens"
AI_USAGE_NO_CACHE_TOKENS: Final = "ai.usage.inputTokenDetails.noCacheTokens"  # ai >= 6
AI_USAGE_CACHE_READ_TOKENS: Final = "ai.usage.inputTokenDetails.cacheReadTokens"
AI_USAGE_CACHE_WRITE_TOKENS: Final = "ai.usage.inputTokenDetails.cacheWriteTokens"
AI_USAGE_OUTPUT_REASONING_TOKENS: Final = "ai.usage.outputTokenDetails.reasoningTokens"
AI_RESPONSE_MS_TO_FIRST_CHUNK: Final = "ai.response.msToFirstChunk"  # ms (a double)
AI_RESPONSE_FINISH_REASON: Final = "ai.response.finishReason"
AI_RESPONSE_PROVIDER_METADATA: Final = "ai.response.providerMetadata"  # JSON

# Langfuse SDK v3 (langfuse/langfuse-python langfuse/_client/attributes.py): values are
# JSON text (usage and cost details, the completion start time).
LF_OBSERVATION_TYPE: Final = "langfuse.observation.type"
LF_MODEL: Final = "langfuse.observation.model.name"
LF_USAGE_DETAILS: Final = "langfuse.observation.usage_details"
LF_COST_DETAILS: Final = "langfuse.observation.cost_details"
LF_COMPLETION_START_TIME: Final = "langfuse.observation.completion_start_time"
LF_LEVEL: Final = "langfuse.observation.level"
LF_INPUT: Final = "langfuse.observation.input"
LF_OUTPUT: Final = "langfuse.observation.output"

# Other tools' TTFT key seen in the wild (Sentry relay conventions), seconds.
GEN_AI_RESPONSE_TIME_TO_FIRST_TOKEN: Final = "gen_ai.response.time_to_first_token"

# Enrichment and transition keys added by the forwarder / toolchain processor.
PROCESSOR_ERRORS: Final = _P + "processor_errors"
PROCESSING_NOTES: Final = _P + "processing_notes"  # what a stage did not do in full
TOOL_CALL_TURN: Final = _P + "tool_call_turn"
TOOL_CALL_FROM_SPAN: Final = _P + "tool_call_from_span_id"
SCOPE_NAME: Final = "llm-observe"
