"""Which LLM provider a URL belongs to, and what a request asks for.

One table (:mod:`providers.registry`) serves the in-process HTTP catch-all (httpx,
httpx2, requests) and the REST API's ``/v1/instrumentation/detect``.
``detect(url, body)`` answers provider, model, operation and streaming;
``provider_for_url(url)`` answers the provider alone.
"""

from __future__ import annotations

import json
import threading
from typing import Any
from urllib.parse import unquote, urlsplit

from llm_observe.providers.registry import (
    BY_HOST,
    BY_NAME,
    CHAT,
    EMBEDDINGS,
    GENERATE_CONTENT,
    OLLAMA_PORT,
    OTHER,
    SUFFIXES,
    TEXT_COMPLETION,
    Detection,
    Provider,
)

_custom_lock = threading.Lock()
_custom: tuple[tuple[str, str, str], ...] = ()  # (scheme://host:port, path prefix, provider)


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


def _match(scheme: str, host: str, port: int | None, path: str) -> Provider | None:
    if _custom:
        origin = f"{scheme}://{host}:{port or (443 if scheme == 'https' else 80)}"
        for c_origin, prefix, name in _custom:
            if c_origin == origin and path.startswith(prefix):
                return BY_NAME.get(name) or Provider(name, "openai")
    entry = BY_HOST.get(host)
    if entry is not None:
        return entry
    if port == OLLAMA_PORT:
        return BY_NAME["ollama"]
    for suffix, provider in SUFFIXES:
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
    except (ValueError, UnicodeDecodeError, RecursionError):
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
