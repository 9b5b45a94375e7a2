"""``instrument_client(client, provider)``: instrument one client instance only.

The patch is an instance attribute shadowing the class method, so other clients are
untouched and removing it (``uninstrument_client`` / ``uninstrument_all``) restores
the class behaviour exactly. If the class is patched globally too, the instance layer
records the call and the class layer sees it active: still one span.
"""

from __future__ import annotations

import functools
import inspect
import threading
import weakref
from typing import Any

from llm_observe.instrument import http
from llm_observe.instrument.calls import Wrapper, async_wrapper, sync_wrapper
from llm_observe.instrument.targets import anthropic as anthropic_target
from llm_observe.instrument.targets import httpx as httpx_target
from llm_observe.instrument.targets import openai as openai_target
from llm_observe.instrument.targets import requests as requests_target
from llm_observe.providers import canonical_provider

_MARK = "__llm_observe_instance_patch__"
_lock = threading.Lock()
_patched: list[tuple[Any, str]] = []  # (weakref or object, attribute)


def _is_async(resource: Any, name: str) -> bool:
    method = getattr(type(resource), name)
    return inspect.iscoroutinefunction(getattr(method, "__wrapped__", method))


def _patch(obj: Any, name: str, wrapper: Wrapper) -> None:
    if getattr(vars(obj).get(name), _MARK, False):
        return  # already instrumented: idempotent
    bound = getattr(obj, name)

    @functools.wraps(bound)
    def patched(*args: Any, **kwargs: Any) -> Any:
        return wrapper(bound, obj, args, kwargs)

    setattr(patched, _MARK, True)
    setattr(obj, name, patched)
    try:
        ref: Any = weakref.ref(obj)
    except TypeError:
        ref = obj
    with _lock:
        _patched.append((ref, name))


def instrument_client(client: Any, provider: str) -> Any:
    """Record every LLM call made through ``client`` as ``provider``; returns the client.

    Supports OpenAI-style clients (``chat.completions.create``), Anthropic-style clients
    (``messages.create`` / ``messages.stream``), ``httpx``/``httpx2`` clients and
    ``requests`` sessions. Raises TypeError for anything else.
    """
    name = canonical_provider(provider) or "unknown"
    completions = getattr(getattr(client, "chat", None), "completions", None)
    messages = getattr(client, "messages", None)
    if completions is not None and hasattr(completions, "create"):
        spec = openai_target.SPEC.with_provider(name)
        shell = async_wrapper if _is_async(completions, "create") else sync_wrapper
        _patch(completions, "create", shell(spec))
    elif messages is not None and hasattr(messages, "create"):
        is_async = _is_async(messages, "create")
        spec = anthropic_target.SPEC.with_provider(name)
        _patch(messages, "create", (async_wrapper if is_async else sync_wrapper)(spec))
        if hasattr(messages, "stream"):
            stream_spec = anthropic_target.STREAM_SPEC.with_provider(name)
            stream_shell = (async_wrapper if is_async else sync_wrapper)(stream_spec)
            _patch(messages, "stream", anthropic_target.stream_wrapper(stream_shell, is_async))
    elif type(client).__name__ == "Session" and hasattr(client, "send"):
        _patch(client, "send", http.sync_send(requests_target.request_parts,
                                              requests_target.after, name))
    elif hasattr(client, "send") and hasattr(client, "build_request"):  # httpx / httpx2
        parts, after = httpx_target.request_parts, httpx_target.after
        send = (http.async_send if _is_async(client, "send") else http.sync_send)(
            parts, after, name)
        _patch(client, "send", send)
    else:
        raise TypeError(f"llm-observe cannot instrument {type(client).__qualname__}: expected "
                        "an OpenAI or Anthropic client, an httpx/httpx2 client or a "
                        "requests Session")
    return client


def uninstrument_clients() -> None:
    """Remove every ``instrument_client`` patch."""
    with _lock:
        entries, _patched[:] = list(_patched), []
    for ref, name in entries:
        obj = ref() if isinstance(ref, weakref.ref) else ref
        if obj is not None and getattr(vars(obj).get(name), _MARK, False):
            delattr(obj, name)
