"""LangChain: ``BaseChatModel.invoke`` / ``ainvoke``, hence every chat model subclass.

Model and provider come from the model's own ``_get_ls_params`` (what LangSmith uses:
``ls_provider``, ``ls_model_name``); usage from the returned ``AIMessage``'s
``usage_metadata`` (input_tokens already includes cached tokens) and its
``response_metadata`` (model name, finish/stop reason). The provider SDK call that
the model makes underneath records nothing itself: one invoke, one span.
"""

from __future__ import annotations

from typing import Any

from llm_observe.instrument.calls import CallSpec, async_wrapper, sync_wrapper
from llm_observe.instrument.extract._common import (
    Outcome,
    Request,
    TextAccumulator,
    as_int,
    content_text,
    get,
)
from llm_observe.instrument.patching import TablePatcher, Wrap
from llm_observe.providers import canonical_provider


def _request(model_obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request:
    params: dict[str, Any] = {}
    try:
        params = dict(model_obj._get_ls_params(**{k: v for k, v in kwargs.items()
                                                   if k != "config"}))
    except Exception:
        params = {}
    prompt = args[0] if args else kwargs.get("input")
    try:
        prompt = model_obj._convert_input(prompt).to_messages()
    except Exception:
        pass
    provider = canonical_provider(params.get("ls_provider")) or "langchain"
    return Request(params.get("ls_model_name"), prompt, False, provider)


def _response(message: Any, out: Outcome) -> None:
    usage = get(message, "usage_metadata")
    if usage:
        out.prompt_tokens = as_int(get(usage, "input_tokens"))
        out.completion_tokens = as_int(get(usage, "output_tokens"))
        details = get(usage, "input_token_details") or {}
        out.cache_read = as_int(details.get("cache_read")) or None
        out.cache_write = as_int(details.get("cache_creation")) or None
    meta = get(message, "response_metadata") or {}
    out.response_model = meta.get("model_name") or meta.get("model")
    out.response_id = meta.get("id") or get(message, "id")
    out.finish_reason = meta.get("finish_reason") or meta.get("stop_reason")
    text = content_text(get(message, "content"))
    if text:
        out.text_parts.append(text)


SPEC = CallSpec(
    provider=lambda _model: "langchain",
    request=_request,
    response=_response,
    accumulator=TextAccumulator,  # unused: invoke never streams
)

PATCHER = TablePatcher("langchain", "langchain_core", [
    Wrap("langchain_core.language_models.chat_models", "BaseChatModel", "invoke",
         sync_wrapper(SPEC)),
    Wrap("langchain_core.language_models.chat_models", "BaseChatModel", "ainvoke",
         async_wrapper(SPEC)),
])
