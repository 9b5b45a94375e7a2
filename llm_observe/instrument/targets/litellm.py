"""LiteLLM: ``litellm.completion`` / ``litellm.acompletion``, streaming or not.

Responses and stream chunks are OpenAI-shaped, so the OpenAI extraction reads them.
The provider comes from LiteLLM's own routing (``get_llm_provider``: "anthropic/claude"
-> anthropic). A fallback chain (``fallbacks=[...]``) re-enters ``acompletion`` once per
model under our span: those inner calls are the attempts behind ``retry_count`` and
``attempted_models``, and the OpenAI SDK call underneath records nothing itself.
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument.calls import CallSpec, async_wrapper, sync_wrapper
from llm_observe.instrument.extract import openai as extract
from llm_observe.instrument.extract._common import Request
from llm_observe.instrument.patching import TablePatcher, Wrap
from llm_observe.providers import canonical_provider

_routes: dict[tuple[str, str | None, str | None], tuple[str, str]] = {}


def _route(model: str, kwargs: dict[str, Any]) -> tuple[str, str]:
    """(model without provider prefix, provider) as LiteLLM resolves them; cached."""
    key = (model, kwargs.get("custom_llm_provider"), kwargs.get("api_base"))
    hit = _routes.get(key)
    if hit is None:
        import litellm

        try:
            bare, provider, _key, _base = litellm.get_llm_provider(
                model=model, custom_llm_provider=key[1], api_base=key[2])
        except Exception:  # unknown model: LiteLLM will raise its own error on the call
            bare, _, provider = model.partition("/")[::-1] if "/" in model else (model, "", "")
        hit = (bare or model, canonical_provider(provider) or "litellm")
        if len(_routes) > 1024:
            _routes.clear()
        _routes[key] = hit
    return hit


def _request(_instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request:
    model = kwargs.get("model", args[0] if args else None)
    messages = kwargs.get("messages", args[1] if len(args) > 1 else None)
    streaming = kwargs.get("stream") is True
    if not isinstance(model, str):
        return Request(None, messages, streaming)
    bare, provider = _route(model, kwargs)
    return Request(bare, messages, streaming, provider)


SPEC = CallSpec(
    provider=lambda _instance: "litellm",
    request=_request,
    response=extract.response,
    accumulator=extract.ChunkAccumulator,
)

PATCHER = TablePatcher("litellm", "litellm", [
    Wrap("litellm", "", "completion", sync_wrapper(SPEC)),
    Wrap("litellm", "", "acompletion", async_wrapper(SPEC)),
])
