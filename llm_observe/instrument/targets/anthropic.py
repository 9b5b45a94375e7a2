"""Anthropic SDK: ``messages.create`` (sync/async, streaming or not) and ``messages.stream``.

``messages.stream()`` returns a manager whose ``__enter__`` makes the request; we hand it
a request function that records the call and returns the raw event stream wrapped, so
``text_stream``, ``get_final_message()`` and plain iteration all pass through our
wrapper. The beta namespace (``client.beta.messages``) is the same wire format.

anthropic >= 2 also emits its own OpenTelemetry span per API call. While we record a
``messages.create`` call, its span for it is not started, so each call is one span
(ours, with the same GenAI keys plus llm-observe's), not two; a call we pass through
(OTel suppressed) keeps the SDK's span.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from llm_observe.instrument._guard import logger
from llm_observe.instrument.calls import CallSpec, Wrapper, async_wrapper, sync_wrapper
from llm_observe.instrument.context import ACTIVE
from llm_observe.instrument.extract import anthropic as extract
from llm_observe.instrument.patching import TablePatcher, Wrap
from llm_observe.instrument.targets._base_url import provider_of

SPEC = CallSpec(
    provider=lambda resource: provider_of(resource, "anthropic"),
    request=lambda _resource, args, kwargs: extract.request(args, kwargs),
    response=extract.response,
    accumulator=extract.EventAccumulator,
    wire="anthropic",
)
STREAM_SPEC = dataclasses.replace(SPEC, always_streams=True)
_SYNC_CREATE = sync_wrapper(SPEC)
_ASYNC_CREATE = async_wrapper(SPEC)
_SYNC_STREAM = sync_wrapper(STREAM_SPEC)
_ASYNC_STREAM = async_wrapper(STREAM_SPEC)


def _request_slot(manager: Any) -> str | None:
    # The manager keeps its request in a private ``__api_request`` (name-mangled per class).
    return next((k for k in vars(manager) if k.endswith("__api_request")), None)


def stream_wrapper(shell: Wrapper, is_async: bool) -> Wrapper:
    def wrapper(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        manager = wrapped(*args, **kwargs)
        slot = _request_slot(manager)
        if slot is None:
            logger.debug("llm-observe: unknown %s layout; stream not recorded", type(manager))
            return manager
        original = getattr(manager, slot)

        def call_original(**_: Any) -> Any:
            return original() if not is_async else original

        if is_async:  # an awaitable, consumed once by __aenter__: the call starts there
            setattr(manager, slot, _Deferred(lambda: shell(call_original, instance, (), kwargs)))
        else:
            setattr(manager, slot, lambda: shell(call_original, instance, (), kwargs))
        return manager

    return wrapper


class _Deferred:
    """An awaitable that makes its awaitable only when awaited, so the call is timed
    from ``async with`` (where the request is sent), not from ``stream()``."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make

    def __await__(self) -> Any:
        return self._make().__await__()


def _native_span(wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...],
                 kwargs: dict[str, Any]) -> Any:
    options = args[2] if len(args) > 2 else kwargs.get("options")
    if ACTIVE.get() is not None and getattr(options, "span_name", None) == \
            "anthropic.messages.create":
        return None  # we are recording this call: the SDK then makes it without its span
    return wrapped(*args, **kwargs)


_MODULES = ("anthropic.resources.messages.messages", "anthropic.resources.messages",
            "anthropic.resources.beta.messages.messages")

PATCHER = TablePatcher("anthropic", "anthropic", [
    *(entry
      for module in _MODULES
      for entry in (
          Wrap(module, "Messages", "create", _SYNC_CREATE, optional=True),
          Wrap(module, "AsyncMessages", "create", _ASYNC_CREATE, optional=True),
          Wrap(module, "Messages", "stream", stream_wrapper(_SYNC_STREAM, False), optional=True),
          Wrap(module, "AsyncMessages", "stream", stream_wrapper(_ASYNC_STREAM, True),
               optional=True),
      )),
    Wrap("anthropic._base_client", "", "start_api_call_span", _native_span, optional=True),
])
