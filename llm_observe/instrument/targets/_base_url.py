"""Provider of an SDK client from its base URL (an OpenAI client pointed at Groq is Groq)."""

from __future__ import annotations

from typing import Any

from llm_observe.providers import provider_for_url

_cache: dict[int, tuple[Any, str]] = {}


def provider_of(resource: Any, default: str) -> str:
    """The provider of the client behind an SDK resource object, else ``default``."""
    client = getattr(resource, "_client", None)
    base_url = getattr(client, "base_url", None)
    if base_url is None:
        return default
    hit = _cache.get(id(base_url))
    if hit is not None and hit[0] is base_url:  # the cache holds the URL, so ids stay unique
        return hit[1]
    provider = provider_for_url(str(base_url)) or default
    if len(_cache) > 256:
        _cache.clear()
    _cache[id(base_url)] = (base_url, provider)
    return provider
