"""Which keys feed which LlmSpan field: the key chains of every dialect, and the Plan.

Dialects (table and sources in docs/attribute-mapping.md): our own ``llm_observe.*``
keys, the OTel GenAI semantic conventions (current and deprecated keys), OpenLLMetry,
OpenInference, OpenLIT, Pydantic AI / Logfire, LiteLLM's OTel callback, the Vercel AI
SDK (``ai.*``) and the Langfuse SDK (``langfuse.observation.*``). For each field the
keys are tried in order and the first present wins; our own keys come first (the
in-process library writes exact values there), then the GenAI semconv, then each
peer's. The keys do not clash between dialects, so one chain per field serves every
dialect; only token usage needs a dialect's own rule (:mod:`otlp.usage`).

Cost: the attributes arrive as a upb map (:mod:`otlp.wire`), so each key test is one C
hash probe (~35 ns); the chains are resolved once per key set and cached.
"""

from __future__ import annotations

from typing import Any

from llm_observe import semconv as sc
from llm_observe.otlp import texts
from llm_observe.otlp.keysets import KeySetCache

# --- which spans are LLM calls ---------------------------------------------------
# Any of these keys marks a span as an LLM call (OpenInference decides by its kind,
# Langfuse by its observation type).
MARKERS = (sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL, sc.SPAN_KIND_LLM,
           sc.LLM_REQUEST_MODEL)
# Operations that carry gen_ai.* keys but are not one model call: agent and tool
# spans wrap the LLM spans (counting them would count the calls twice). Values
# from GenAI semconv gen_ai.operation.name, OpenLIT and OpenLLMetry span kinds.
NOT_LLM_OPERATIONS = frozenset({
    "invoke_agent", "create_agent", "execute_tool", "invoke_workflow", "execute_task",
    "agent", "framework", "vectordb", "retrieval", "workflow", "task", "tool", "rerank",
    # Embedding calls are no chat/completion call (no completion, no TTFT); OpenInference's
    # EMBEDDING kind is left out the same way (LiteLLM's llm.request.type: aembedding).
    "embeddings", "embedding", "aembedding",
    # Logfire (logfire.span_type): a pending span is the start-time copy of a span that
    # arrives again when it ends. Its "log" records are no call either — except the
    # streaming-response record, which carries the streamed call's usage
    # (dialects.logfire_stream).
    "pending_span", "log",
})
# Langfuse observation types that are one model call (langfuse/_client/constants.py).
LANGFUSE_LLM_TYPES = frozenset({"generation"})

# --- key chains: first present wins ---------------------------------------------
_MODEL = (sc.GEN_AI_REQUEST_MODEL, sc.LLM_REQUEST_MODEL, sc.OI_REQUEST_MODEL_NAME,
          sc.OI_MODEL_NAME, sc.LF_MODEL, sc.AI_MODEL_ID)
_ACTUAL_MODEL = (sc.ACTUAL_MODEL, sc.GEN_AI_RESPONSE_MODEL, sc.LLM_RESPONSE_MODEL,
                 sc.OI_RESPONSE_MODEL_NAME, sc.AI_RESPONSE_MODEL)
_PROVIDER = (sc.GEN_AI_PROVIDER_NAME, sc.GEN_AI_SYSTEM, sc.OI_PROVIDER, sc.OI_SYSTEM,
             sc.LLM_VENDOR, sc.AI_MODEL_PROVIDER)
PROMPT_TOKENS = (sc.PROMPT_TOKENS, sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_PROMPT_TOKENS,
                 sc.OI_TOKEN_COUNT_PROMPT, sc.LLM_USAGE_PROMPT_TOKENS, sc.LLM_USAGE_INPUT_TOKENS,
                 sc.AI_USAGE_INPUT_TOKENS, sc.AI_USAGE_PROMPT_TOKENS)
COMPLETION_TOKENS = (sc.COMPLETION_TOKENS, sc.GEN_AI_USAGE_OUTPUT_TOKENS,
                     sc.GEN_AI_USAGE_COMPLETION_TOKENS, sc.OI_TOKEN_COUNT_COMPLETION,
                     sc.LLM_USAGE_COMPLETION_TOKENS, sc.LLM_USAGE_OUTPUT_TOKENS,
                     sc.AI_USAGE_OUTPUT_TOKENS, sc.AI_USAGE_COMPLETION_TOKENS)
TOTAL_TOKENS = (sc.GEN_AI_USAGE_TOTAL_TOKENS, sc.OI_TOKEN_COUNT_TOTAL, sc.LLM_USAGE_TOTAL_TOKENS,
                sc.AI_USAGE_TOTAL_TOKENS)
CACHE_READ = (sc.CACHE_READ_TOKENS, sc.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS,
              sc.OLLM_USAGE_CACHE_READ_INPUT_TOKENS, sc.OI_TOKEN_COUNT_CACHE_READ,
              sc.LLM_USAGE_CACHE_READ_INPUT_TOKENS, sc.AI_USAGE_CACHE_READ_TOKENS,
              sc.AI_USAGE_CACHED_INPUT_TOKENS)
CACHE_WRITE = (sc.CACHE_WRITE_TOKENS, sc.GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS,
               sc.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS,
               sc.OLLM_USAGE_CACHE_CREATION_INPUT_TOKENS, sc.OI_TOKEN_COUNT_CACHE_WRITE,
               sc.LLM_USAGE_CACHE_CREATION_INPUT_TOKENS, sc.AI_USAGE_CACHE_WRITE_TOKENS)
REASONING = (sc.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS, sc.OI_TOKEN_COUNT_REASONING,
             "gen_ai.usage.reasoning_tokens", "llm.usage.reasoning_tokens",  # OpenLLMetry
             sc.PYDANTIC_REASONING_TOKENS, sc.AI_USAGE_OUTPUT_REASONING_TOKENS,
             sc.AI_USAGE_REASONING_TOKENS)
# The producer's own cost estimate, USD (OpenLIT, OpenInference, Pydantic AI / Logfire,
# LiteLLM); Langfuse's cost_details JSON is read by otlp.sdk_usage.
REPORTED_COST = (sc.OPENLIT_USAGE_COST, sc.OI_COST_TOTAL, sc.OPERATION_COST,
                 sc.LITELLM_COST_TOTAL)
# TTFT: (key, unit) with unit 0 = our whole ms, 1 = ms as a double (Vercel AI SDK),
# 1000 = seconds (GenAI semconv, Pydantic AI, OpenLIT, Sentry's key).
_TTFT = ((sc.LATENCY_MS_TTFT, 0), (sc.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, 1000),
         (sc.PYDANTIC_TIME_TO_FIRST_CHUNK, 1000), (sc.OPENLIT_SERVER_TTFT, 1000),
         (sc.GEN_AI_RESPONSE_TIME_TO_FIRST_TOKEN, 1000), (sc.AI_RESPONSE_MS_TO_FIRST_CHUNK, 1))
_FINISH = (sc.FINISH_REASON, sc.GEN_AI_RESPONSE_FINISH_REASONS, "gen_ai.completion.0.finish_reason",
           sc.OLLM_RESPONSE_FINISH_REASON, sc.OLLM_GEN_AI_RESPONSE_FINISH_REASON,
           sc.OI_FINISH_REASON, sc.AI_RESPONSE_FINISH_REASON)
_SESSION = (sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID, sc.OI_SESSION_ID)
_OPS = (sc.GEN_AI_OPERATION_NAME, sc.OLLM_SPAN_KIND, sc.OLLM_REQUEST_TYPE, sc.LOGFIRE_SPAN_TYPE)
_LANGFUSE = (sc.LF_USAGE_DETAILS, sc.LF_COST_DETAILS, sc.LF_COMPLETION_START_TIME)
# The price structures' counts (docs/pricing.md), read when present: (LlmSpan field, keys).
DETAILS = (
    ("cache_write_1h_tokens", (sc.CACHE_WRITE_1H_TOKENS,)),
    ("audio_input_tokens", (sc.AUDIO_INPUT_TOKENS, sc.OI_PROMPT_AUDIO_TOKENS)),
    ("audio_output_tokens", (sc.AUDIO_OUTPUT_TOKENS, sc.OI_COMPLETION_AUDIO_TOKENS)),
    ("image_input_tokens", (sc.IMAGE_INPUT_TOKENS,)),
    ("image_output_tokens", (sc.IMAGE_OUTPUT_TOKENS,)),
)
SERVICE_TIER = (sc.SERVICE_TIER, sc.OPENAI_RESPONSE_SERVICE_TIER,
                sc.GEN_AI_OPENAI_RESPONSE_SERVICE_TIER)

# Every attribute key map_span reads (besides the text families of otlp/texts.py).
MAPPED_KEYS = (*MARKERS, *_MODEL, *_ACTUAL_MODEL, *_PROVIDER, *PROMPT_TOKENS,
               *COMPLETION_TOKENS, *TOTAL_TOKENS, *CACHE_READ, *CACHE_WRITE, *REASONING,
               *REPORTED_COST, *(k for k, _ in _TTFT), *_FINISH, *_SESSION, *_OPS, *_LANGFUSE,
               sc.OI_SPAN_KIND, sc.LF_OBSERVATION_TYPE, sc.OI_INVOCATION_PARAMETERS,
               sc.SERVICE, sc.SERVICE_NAME, sc.LATENCY_MS_TOTAL, sc.STATUS, sc.ERROR_TYPE,
               sc.RETRY_COUNT, sc.ATTEMPTED_MODELS, sc.ENDPOINT, sc.TOKEN_COUNT_METHOD,
               sc.PII_DETECTED, sc.INJECTION_ATTEMPT, sc.IS_SAMPLED, sc.AI_USAGE_NO_CACHE_TOKENS,
               sc.AI_RESPONSE_PROVIDER_METADATA, sc.LITELLM_USAGE_OBJECT,
               *(k for _, keys in DETAILS for k in keys), *SERVICE_TIER)

PLAN_MAX_KEYS = 128  # spans with more attributes are planned without the cache
PLAN_MAX_KEY_CHARS = 8192  # nor are key sets longer than this: the cache holds the keys
_PLAN_CACHE_SIZE = 1024


class Plan:
    """Which key feeds which field, for one set of attribute keys.

    Spans from one instrumentation share their key set, so the chains of
    ``in`` tests are resolved once per key set and cached; a span then reads
    only the keys that are present.
    """

    __slots__ = ("actual", "attempted", "cache_read", "cache_write", "completion",
                 "completion_texts", "cost", "details", "endpoint", "error_type", "finish",
                 "injection", "invocation", "is_llm", "kind", "langfuse", "latency", "logfire",
                 "method",
                 "model", "ops", "pii", "prompt", "prompt_texts", "provider", "reasoning",
                 "retry", "sampled", "service", "service_tier", "session", "status",
                 "texts_in_attrs", "total", "ttft", "ttft_unit", "usage_object", "vercel")

    def __init__(self, attrs: Any) -> None:
        def first(keys: tuple[str, ...]) -> str | None:
            return next((k for k in keys if k in attrs), None)

        def opt(key: str) -> str | None:
            return key if key in attrs else None

        # OpenInference's span kind or Langfuse's observation type decides alone.
        self.kind = opt(sc.OI_SPAN_KIND) or opt(sc.LF_OBSERVATION_TYPE)
        self.is_llm = self.kind is not None or any(k in attrs for k in MARKERS)
        self.ops = tuple(k for k in _OPS if k in attrs)
        self.model, self.actual = first(_MODEL), first(_ACTUAL_MODEL)
        # OpenInference's llm.model_name is the model that answered; the requested
        # one is only in the invocation parameters (JSON).
        self.invocation = (opt(sc.OI_INVOCATION_PARAMETERS)
                           if self.model == sc.OI_MODEL_NAME and self.actual is None else None)
        # OpenLIT puts service.name on the span too (its application_name).
        self.provider, self.service = first(_PROVIDER), first((sc.SERVICE, sc.SERVICE_NAME))
        self.prompt, self.completion = first(PROMPT_TOKENS), first(COMPLETION_TOKENS)
        self.total = first(TOTAL_TOKENS)
        self.cache_read, self.cache_write = first(CACHE_READ), first(CACHE_WRITE)
        self.reasoning, self.cost = first(REASONING), first(REPORTED_COST)
        self.latency = opt(sc.LATENCY_MS_TOTAL)
        ttft: tuple[str | None, int] = next(((k, u) for k, u in _TTFT if k in attrs), (None, 0))
        self.ttft, self.ttft_unit = ttft
        self.finish, self.session = first(_FINISH), first(_SESSION)
        self.status, self.error_type = opt(sc.STATUS), opt(sc.ERROR_TYPE)
        self.retry, self.attempted = opt(sc.RETRY_COUNT), opt(sc.ATTEMPTED_MODELS)
        self.endpoint, self.method = opt(sc.ENDPOINT), opt(sc.TOKEN_COUNT_METHOD)
        self.pii, self.injection = opt(sc.PII_DETECTED), opt(sc.INJECTION_ATTEMPT)
        self.sampled = opt(sc.IS_SAMPLED)
        self.details = tuple((f, k) for f, keys in DETAILS if (k := first(keys)) is not None)
        self.service_tier = first(SERVICE_TIER)
        # Dialects whose usage needs their own rule (otlp.usage): Langfuse's JSON details;
        # a Vercel AI SDK span without the ai >= 6 input token details.
        self.langfuse = tuple(k for k in _LANGFUSE if k in attrs)
        self.logfire = sc.LOGFIRE_SPAN_TYPE in attrs  # its streams' own rule (dialects)
        self.vercel = (sc.AI_USAGE_INPUT_TOKENS in attrs or sc.AI_USAGE_PROMPT_TOKENS in attrs) \
            and sc.AI_USAGE_NO_CACHE_TOKENS not in attrs
        # LiteLLM's default mode: cache counts only in its usage object.
        self.usage_object = (opt(sc.LITELLM_USAGE_OBJECT) if self.cache_read is None
                             and self.cache_write is None else None)
        self.prompt_texts = texts.candidates(attrs, texts.PROMPT)
        self.completion_texts = texts.candidates(attrs, texts.COMPLETION)
        # Whether a text family is an attribute; event families are read only when the
        # span has events.
        self.texts_in_attrs = any(f.kind != "event" for _, f in
                                  self.prompt_texts + self.completion_texts)


_plans: KeySetCache[Plan] = KeySetCache(Plan, _PLAN_CACHE_SIZE, PLAN_MAX_KEYS,
                                        PLAN_MAX_KEY_CHARS)


def plan_for(attrs: Any) -> Plan:
    """The (cached) Plan for a span's attribute keys (otlp/keysets.py)."""
    return _plans.get(attrs)
