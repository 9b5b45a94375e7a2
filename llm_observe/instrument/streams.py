"""Stream wrappers: one ``wrapt.ObjectProxy`` base, finalised exactly once.

A wrapped stream behaves as the original for the user (same items, same attributes,
``isinstance`` still true). Every item passes an ``Accumulator``; the first one
stamps TTFT. The call is finished on whichever comes first: exhaustion, an error
mid-stream, ``close()`` / ``aclose()``, leaving a ``with`` block, or garbage collection
of an abandoned stream (an early ``break`` with no close). State lives in ``_self_*``
attributes on the proxy, never on the SDK object.
"""

from __future__ import annotations

from typing import Any

import wrapt

from llm_observe.instrument._guard import report
from llm_observe.instrument.context import ACTIVE
from llm_observe.instrument.extract._common import Accumulator
from llm_observe.instrument.record import LlmCall


class StreamProxy(wrapt.ObjectProxy):  # type: ignore[misc,type-arg]
    """Shared state and finalisation of the sync and async stream shells."""

    def __init__(self, wrapped: Any, call: LlmCall, accumulator: Accumulator) -> None:
        super().__init__(wrapped)
        self._self_call = call
        self._self_acc: Accumulator | None = accumulator  # None once it failed
        self._self_source = accumulator  # what was gathered before any failure still counts
        self._self_started = False

    def _self_item(self, item: Any) -> None:
        if not self._self_started:
            self._self_started = True
            self._self_call.first_chunk()
        acc = self._self_acc
        if acc is not None:
            try:
                acc.add(item)
            except Exception:
                self._self_drop()

    def _self_drop(self) -> None:
        # Stop accumulating, never the user's stream.
        self._self_acc = None
        report("stream accumulator")

    def _self_finish(self, error: BaseException | None = None) -> None:
        call = self._self_call
        if call.done:
            return
        outcome = None
        try:
            outcome = self._self_source.outcome
        except Exception:
            report("stream outcome")
        call.finish(outcome, error)

    def _self_exit_error(self, exc: BaseException | None) -> BaseException | None:
        # Leaving a ``with`` block early (break, return, GeneratorExit) is a close.
        if exc is None or isinstance(exc, GeneratorExit):
            return None
        return exc

    def close(self) -> Any:
        try:
            closer = getattr(self.__wrapped__, "close", None)
            return closer() if closer is not None else None
        finally:
            self._self_finish()

    def __enter__(self) -> Any:
        enter = getattr(self.__wrapped__, "__enter__", None)
        if enter is not None:
            enter()
        return self

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        try:
            exit_ = getattr(self.__wrapped__, "__exit__", None)
            if exit_ is not None:
                return exit_(exc_type, exc, tb)
            closer = getattr(self.__wrapped__, "close", None)
            if closer is not None:
                closer()
            return None
        finally:
            self._self_finish(self._self_exit_error(exc))

    def __del__(self) -> None:
        # An abandoned stream (break without close) still produces its span.
        try:
            self._self_finish()
        except Exception:
            pass

    def __copy__(self) -> Any:
        raise TypeError("llm-observe stream wrappers cannot be copied")

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("llm-observe stream wrappers cannot be pickled")


class SyncStream(StreamProxy):
    """Sync iterator shell: iteration, ``close()``, ``with``."""

    def __init__(self, wrapped: Any, call: LlmCall, accumulator: Accumulator) -> None:
        super().__init__(wrapped, call, accumulator)
        self._self_iter = wrapped if hasattr(type(wrapped), "__next__") else iter(wrapped)

    def __iter__(self) -> SyncStream:
        return self

    def __next__(self) -> Any:
        try:
            if self._self_started:
                item = next(self._self_iter)
            else:  # a lazy stream sends its request now (LiteLLM's Gemini, Vertex ...)
                token = ACTIVE.set(self._self_call)  # ... and it is this call's request
                try:
                    item = next(self._self_iter)
                finally:
                    ACTIVE.reset(token)
        except StopIteration:
            self._self_finish()
            raise
        except BaseException as exc:
            self._self_finish(None if isinstance(exc, GeneratorExit) else exc)
            raise
        # The per-chunk hot path, inlined: one branch and one call per item.
        acc = self._self_acc
        if self._self_started and acc is not None:
            try:
                acc.add(item)
            except Exception:
                self._self_drop()
        else:
            self._self_item(item)
        return item


class AsyncStream(StreamProxy):
    """Async iterator shell: ``async for``, ``aclose()`` / ``close()``, ``async with``."""

    def __init__(self, wrapped: Any, call: LlmCall, accumulator: Accumulator) -> None:
        super().__init__(wrapped, call, accumulator)
        self._self_iter = (wrapped if hasattr(type(wrapped), "__anext__")
                           else wrapped.__aiter__())

    def __aiter__(self) -> AsyncStream:
        return self

    async def __anext__(self) -> Any:
        try:
            if self._self_started:
                item = await self._self_iter.__anext__()
            else:  # see SyncStream.__next__: a lazy stream's request is this call's
                token = ACTIVE.set(self._self_call)
                try:
                    item = await self._self_iter.__anext__()
                finally:
                    ACTIVE.reset(token)
        except StopAsyncIteration:
            self._self_finish()
            raise
        except BaseException as exc:
            self._self_finish(None if isinstance(exc, GeneratorExit) else exc)
            raise
        self._self_item(item)
        return item

    async def _self_close_wrapped(self) -> Any:
        wrapped = self.__wrapped__
        closer = getattr(wrapped, "aclose", None) or getattr(wrapped, "close", None)
        if closer is None:
            return None
        result = closer()
        if hasattr(result, "__await__"):
            result = await result
        return result

    async def aclose(self) -> Any:
        try:
            return await self._self_close_wrapped()
        finally:
            self._self_finish()

    close = aclose  # the OpenAI/Anthropic async streams name it close()

    async def __aenter__(self) -> Any:
        enter = getattr(self.__wrapped__, "__aenter__", None)
        if enter is not None:
            await enter()
        return self

    async def __aexit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> Any:
        try:
            exit_ = getattr(self.__wrapped__, "__aexit__", None)
            if exit_ is not None:
                return await exit_(exc_type, exc, tb)
            await self._self_close_wrapped()
            return None
        finally:
            self._self_finish(self._self_exit_error(exc))
