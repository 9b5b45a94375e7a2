"""The provider table: which LLM provider a URL belongs to, and what a request asks for.

One table serves the in-process HTTP catch-all (httpx, httpx2, requests) and the REST
API's ``/v1/instrumentation/detect``. ``detect(url, body)`` answers provider, model,
operation and streaming; ``provider_for_url(url)`` answers the provider alone.

Hosts and paths come from each provider's public API reference (OpenAI, Azure OpenAI,
Anthropic, Gemini API, Vertex AI, Mistral, Cohere v1/v2, Groq, DeepSeek, xAI, Together,
OpenRouter, Bedrock runtime, Ollama, Fireworks, Perplexity, Cerebras). Provider names
are short canonical labels; ``SEMCONV_NAMES`` gives the OTel GenAI
``gen_ai.provider.name`` well-known value where the semconv defines one
(https://opentelemetry.io/docs/specs/semconv/registry/attributes/gen-ai/).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

# Operations (GenAI semconv gen_ai.operation.name values) that are LLM calls; anything
# else on a provider host (list models, count tokens, batches) is "other".
CHAT = "chat"
TEXT_COMPLETION = "text_completion"
GENERATE_CONTENT = "generate_content"
EMBEDDINGS = "embeddings"
OTHER = "other"
LLM_OPERATIONS = frozenset({CHAT, TEXT_COMPLETION, GENERATE_CONTENT, EMBEDDINGS})


@dataclass(frozen=True, slots=True)
class Detection:
    """What a request to an LLM provider is: provider, model, operation, streaming.

    ``wire`` names the response format family (``openai``, ``anthropic``, ``gemini``,
    ``cohere``, ``ollama``, ``bedrock``) so callers know how to read the answer.
    """

    provider: str
    model: str | None
    operation: str
    streaming: bool
    wire: str = "openai"

    @property
    def is_llm_call(self) -> bool:
        return self.operation in LLM_OPERATIONS


@dataclass(frozen=True, slots=True)
class _Provider:
    name: str
    wire: str
    hosts: tuple[str, ...] = ()
    suffixes: tuple[str, ...] = ()


# Order matters only for suffix matches (most specific first).
_PROVIDERS: tuple[_Provider, ...] = (
    _Provider("openai", "openai", ("api.openai.com",)),
    _Provider("azure_openai", "openai", (), (".openai.azure.com", ".cognitiveservices.azure.com")),
    _Provider("anthropic", "anthropic", ("api.anthropic.com",)),
    _Provider("gemini", "gemini", ("generativelanguage.googleapis.com",)),
    _Provider(
        "vertex_ai", "gemini", ("aiplatform.googleapis.com",), ("-aiplatform.googleapis.com",)
    ),
    _Provider("mistral", "openai", ("api.mistral.ai", "codestral.mistral.ai")),
    _Provider("cohere", "cohere", ("api.cohere.com", "api.cohere.ai")),
    _Provider("groq", "openai", ("api.groq.com",)),
    _Provider("deepseek", "openai", ("api.deepseek.com",)),
    _Provider("xai", "openai", ("api.x.ai",)),
    _Provider("together", "openai", ("api.together.xyz", "api.together.ai")),
    _Provider("openrouter", "openai", ("openrouter.ai",)),
    _Provider("bedrock", "bedrock", (), (".amazonaws.com",)),  # bedrock-runtime.* only, see below
    _Provider("ollama", "ollama", ("ollama.com",)),
    _Provider("fireworks", "openai", ("api.fireworks.ai",)),
    _Provider("perplexity", "openai", ("api.perplexity.ai",)),
    _Provider("cerebras", "openai", ("api.cerebras.ai",)),
)
_BY_NAME = {p.name: p for p in _PROVIDERS}
_BY_HOST = {host: p for p in _PROVIDERS for host in p.hosts}
_SUFFIXES = tuple((s, p) for p in _PROVIDERS for s in p.suffixes)
OLLAMA_PORT = 11434

SEMCONV_NAMES: dict[str, str] = {
    "azure_openai": "azure.ai.openai",
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "bedrock": "aws.bedrock",
}

# Other spellings of the same providers: GenAI semconv values, LiteLLM provider ids,
# LangChain ls_provider values, OpenLLMetry's capitalised gen_ai.system values.
_ALIASES: dict[str, str] = {
    **{v: k for k, v in SEMCONV_NAMES.items()},
    "azure": "azure_openai", "azure_ai": "azure_openai", "az.ai.openai": "azure_openai",
    "google": "gemini", "google_genai": "gemini", "google_ai_studio": "gemini",
    "gcp.gen_ai": "gemini",
    "vertex": "vertex_ai", "vertexai": "vertex_ai", "google_vertexai": "vertex_ai",
    "vertex_ai_beta": "vertex_ai", "mistralai": "mistral", "x.ai": "xai", "grok": "xai",
    "together_ai": "together", "togetherai": "together", "fireworks_ai": "fireworks",
    "amazon_bedrock": "bedrock", "bedrock_converse": "bedrock", "aws": "bedrock",
    "ollama_chat": "ollama", "text-completion-openai": "openai", "cohere_chat": "cohere",
}

_custom_lock = threading.Lock()
_custom: tuple[tuple[str, str, str], ...] = ()  # (scheme://host:port, path prefix, provider)


def canonical_provider(name: str | None) -> str | None:
    """Normalise any provider spelling (semconv, LiteLLM, LangChain, OpenLLMetry) to ours."""
    if not name:
        return None
    key = name.strip().lower()
    return _ALIASES.get(key, key)


def semconv_provider(name: str) -> str:
    """The ``gen_ai.provider.name`` value for one of our provider names."""
    return SEMCONV_NAMES.get(name, name)


def wire_of(provider: str) -> str:
    """The response format family of a provider (``openai`` for unknown ones)."""
    known = _BY_NAME.get(provider)
    return known.wire if known is not None else "openai"


def register_base_url(base_url: str, provider: str) -> None:
    """Treat every URL under ``base_url`` as ``provider`` (proxies, self-hosted, tests)."""
    origin, prefix = _origin_and_path(base_url)
    global _custom
    with _custom_lock:
        kept = tuple(c for c in _custom if (c[0], c[1]) != (origin, prefix))
        # Longest prefix first so the most specific registration wins.
        _custom = tuple(sorted((*kept, (origin, prefix, provider)), key=lambda c: -len(c[1])))


def unregister_base_url(base_url: str) -> None:
    """Forget a ``register_base_url`` registration; unknown URLs are ignored."""
    origin, prefix = _origin_and_path(base_url)
    global _custom
    with _custom_lock:
        _custom = tuple(c for c in _custom if (c[0], c[1]) != (origin, prefix))


def _origin_and_path(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{host}:{port}", parts.path.rstrip("/")


def provider_for_url(url: str) -> str | None:
    """The provider a URL belongs to, or None for hosts that are not known LLM APIs."""
    try:
        parts = urlsplit(url)
        entry = _match(parts.scheme, (parts.hostname or "").lower(), parts.port, parts.path)
    except ValueError:  # malformed port and the like: not a provider URL
        return None
    return entry.name if entry is not None else None


def _match(scheme: str, host: str, port: int | None, path: str) -> _Provider | None:
    if _custom:
        origin = f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"
        for c_origin, prefix, name in _custom:
            if c_origin == origin and path.startswith(prefix):
                return _BY_NAME.get(name) or _Provider(name, "openai")
    entry = _BY_HOST.get(host)
    if entry is not None:
        return entry
    if port == OLLAMA_PORT:
        return _BY_NAME["ollama"]
    for suffix, provider in _SUFFIXES:
        if host.endswith(suffix):
            if provider.name == "bedrock" and not host.startswith("bedrock-runtime"):
                continue
            return provider
    return None


def detect(url: str, body: str | bytes | dict[str, Any] | None) -> Detection | None:
    """Provider, model, operation and streaming of a request; None when the URL is no LLM API.

    ``body`` is the JSON request body (text, bytes or parsed); unparsable bodies are
    treated as absent. Never raises.
    """
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        entry = _match(parts.scheme, host, parts.port, parts.path)
    except ValueError:
        return None
    if entry is None:
        return None
    return detect_parts(entry.name, parts.path, parts.query, body, wire=entry.wire)


def detect_request(
    scheme: str, host: str, port: int | None, path: str, query: str,
    body: str | bytes | dict[str, Any] | None,
) -> Detection | None:
    """``detect`` for a URL already split (the HTTP catch-all has the parts at hand)."""
    entry = _match(scheme, host, port, path)
    if entry is None:
        return None
    return detect_parts(entry.name, path, query, body, wire=entry.wire)


def parse_body(body: str | bytes | dict[str, Any] | None) -> dict[str, Any]:
    """A request body as a dict; {} for anything that is not a JSON object."""
    if isinstance(body, dict):
        return body
    if not body:
        return {}
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def detect_parts(
    provider: str, path: str, query: str, body: str | bytes | dict[str, Any] | None,
    *, wire: str = "openai",
) -> Detection:
    """Operation, model and streaming for a request already matched to ``provider``."""
    data = parse_body(body)
    model = data.get("model") if isinstance(data.get("model"), str) else None
    operation = _operation(path)
    streaming = data.get("stream") is True or "alt=sse" in query
    lowered = path.lower()
    if provider == "azure_openai" and "/deployments/" in path:
        model = model or _segment_after(path, "/deployments/")
    elif wire == "gemini" and "/openai/" in path:
        wire = "openai"  # Gemini's and Vertex's OpenAI-compatible endpoints
    elif wire == "gemini" and "/models/" in path:
        model = model or _segment_after(path, "/models/").split(":", 1)[0]
        streaming = streaming or "streamgeneratecontent" in lowered or "streamrawpredict" in lowered
        if "/publishers/anthropic/" in path:
            wire = "anthropic"
    elif provider == "bedrock" and "/model/" in path:
        model = unquote(_segment_after(path, "/model/"))
        streaming = lowered.endswith("-stream")
        wire = "anthropic" if "anthropic." in model and "/invoke" in lowered else "bedrock"
    elif provider == "ollama" and lowered.startswith(("/api/chat", "/api/generate")):
        streaming = data.get("stream", True) is not False  # Ollama streams unless told not to
    elif provider == "ollama":
        wire = "openai"  # Ollama's /v1 endpoints are OpenAI-compatible
    elif provider == "xai" and lowered.endswith("/messages"):
        wire = "anthropic"  # xAI's Anthropic-compatible endpoint
    return Detection(provider, model, operation, streaming, wire)


def _segment_after(path: str, marker: str) -> str:
    rest = path.split(marker, 1)[1]
    return rest.split("/", 1)[0]


# (path test, operation), checked in order; the first match wins.
_SUFFIX_OPS: tuple[tuple[str, str], ...] = (
    ("/messages/count_tokens", OTHER),
    ("/chat/completions", CHAT),
    ("/fim/completions", TEXT_COMPLETION),
    ("/completions", TEXT_COMPLETION),
    ("/responses", CHAT),
    ("/messages", CHAT),
    ("/complete", TEXT_COMPLETION),
    ("/embeddings", EMBEDDINGS),
    ("/embed", EMBEDDINGS),
    ("/api/chat", CHAT),
    ("/api/generate", TEXT_COMPLETION),
    ("/chat", CHAT),
    ("/generate", TEXT_COMPLETION),
    ("/converse", CHAT),
    ("/converse-stream", CHAT),
    ("/invoke", CHAT),
    ("/invoke-with-response-stream", CHAT),
)
_COLON_OPS: dict[str, str] = {
    "generatecontent": GENERATE_CONTENT,
    "streamgeneratecontent": GENERATE_CONTENT,
    "embedcontent": EMBEDDINGS,
    "batchembedcontents": EMBEDDINGS,
    "rawpredict": CHAT,
    "streamrawpredict": CHAT,
}


def _operation(path: str) -> str:
    lowered = path.lower().rstrip("/")
    last = lowered.rsplit("/", 1)[-1]
    if ":" in last:
        return _COLON_OPS.get(last.rsplit(":", 1)[1], OTHER)
    for suffix, op in _SUFFIX_OPS:
        if lowered.endswith(suffix):
            return op
    return OTHER
