"""Reading an HTTP request body with bounds: the one gzip/deflate inflater of every HTTP door.

An aiohttp app built with ``handler_args={"auto_decompress": False}`` hands over gzip and
deflate bodies as sent; :func:`read_body` inflates them in small steps, yielding the loop,
and stops as soon as the output passes the limit (a 1 MB gzip bomb costs 1 MiB of
inflation; the lingering read after an early answer discards compressed bytes instead of
inflating them). The errors are the door's to word: the REST API answers them as its JSON
errors (api/request.py), the OTLP/HTTP door as ``google.rpc.Status`` (receiver/http_server.py).
A leaf module, so every door may import it.

Memory: a body with a Content-Length is read into one buffer of that size, allocated once
(no growing copies); any other into one buffer grown as it comes. Either is cleared the
moment the read fails (client gone, timeout, too large): an aborted upload's buffer must
not wait for a garbage collection to break the cycle through its traceback. A door may
pass ``reserve`` (called with each increment of buffered bytes before it is buffered; it
raises BodyBusy to refuse) and ``timeout_s`` (the whole body must arrive within it).
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import Callable
from typing import Any

from aiohttp import hdrs, web
from aiohttp.web_protocol import RequestPayloadError

GZIP = ("gzip", "x-gzip")
ENCODINGS = ("identity", "deflate", *GZIP)
_INFLATE_STEP = 65_536  # output bytes per zlib call: ~0.1 ms of work
_SLICE_S = 0.005  # loop time a body read may take before it yields
Reserve = Callable[[int], None]  # n more bytes are about to be buffered; raises to refuse


class BodyError(Exception):
    """The body cannot be taken; ``str(exc)`` says why in a sentence for the sender."""


class UnsupportedEncoding(BodyError):
    """A Content-Encoding other than gzip, deflate or identity (415)."""

    def __init__(self, encoding: str) -> None:
        super().__init__(f"Content-Encoding {encoding!r} is not supported; "
                         "send gzip, deflate or identity")
        self.encoding = encoding


class BodyTooLarge(BodyError):
    """Raw or inflated bytes past the limit (413)."""

    def __init__(self, limit: int, what: str) -> None:
        super().__init__(f"{what}; the limit is {limit} bytes")
        self.limit = limit


class BodyBusy(BodyError):
    """The door holds too many body bytes already (503 with Retry-After)."""


class BodyTimeout(BodyError):
    """The body did not arrive within the door's body timeout (408; a slow client)."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"the request body did not arrive within {timeout_s:g} s")
        self.timeout_s = timeout_s


class BodyUnreadable(BodyError):
    """Broken framing, or bytes that do not match their Content-Encoding (400)."""

    def __init__(self, why: str) -> None:
        super().__init__(f"request body cannot be read: {why}")


def content_encoding(request: web.Request) -> str:
    """The request's Content-Encoding, lower case; UnsupportedEncoding if we cannot inflate it."""
    encoding = request.headers.get(hdrs.CONTENT_ENCODING, "identity").strip().lower()
    if encoding not in ENCODINGS:
        raise UnsupportedEncoding(encoding)
    return encoding


class _Inflater:
    """gzip/deflate inflation in steps of at most _INFLATE_STEP output bytes, capped."""

    __slots__ = ("gzip", "limit", "mark", "pending", "reserve", "z")

    def __init__(self, encoding: str, limit: int, reserve: Reserve) -> None:
        self.gzip, self.limit, self.mark = encoding in GZIP, limit, time.perf_counter()
        self.reserve = reserve
        self.z: Any = None
        self.pending = False  # the last step filled its output: zlib may hold more

    async def feed(self, data: bytes, out: bytearray) -> None:
        """Inflate ``data`` onto ``out``; BodyTooLarge past the limit, BodyUnreadable on a
        corrupt stream."""
        while data or self.pending:
            if self.z is None or self.z.eof:  # gzip may hold several members; deflate not
                if self.z is not None and not self.gzip:
                    raise BodyUnreadable("data after the end of the deflate stream")
                # "deflate" is zlib-wrapped by the RFC but raw from some clients: sniff
                self.z = zlib.decompressobj(31 if self.gzip else 15 if (data[0] & 15) == 8
                                            else -15)
            try:
                piece = self.z.decompress(data, _INFLATE_STEP)
            except zlib.error as exc:
                raise BodyUnreadable(f"it does not match its Content-Encoding ({exc})") from None
            self.reserve(len(piece))
            out += piece
            if len(out) > self.limit:
                raise BodyTooLarge(self.limit, "request body inflates past the limit")
            self.pending = len(piece) == _INFLATE_STEP and not self.z.eof
            data = self.z.unused_data if self.z.eof else self.z.unconsumed_tail
            if time.perf_counter() - self.mark > _SLICE_S:
                await asyncio.sleep(0)
                self.mark = time.perf_counter()


def _unbounded(n: int) -> None:
    del n


async def read_body(request: web.Request, limit: int, *, reserve: Reserve = _unbounded,
                    timeout_s: float | None = None) -> bytes:
    """The body, inflated if gzip/deflate; BodyTooLarge once raw or inflated bytes pass
    ``limit``, BodyUnreadable when it is cut short or corrupt, UnsupportedEncoding;
    BodyTimeout past ``timeout_s``; what ``reserve`` raises (BodyBusy)."""
    encoding = content_encoding(request)
    length = request.content_length
    if length is not None and length > limit:
        raise BodyTooLarge(limit, f"request body is {length} bytes")
    try:
        async with asyncio.timeout(timeout_s):
            if encoding == "identity" and length is not None:
                reserve(length)
                return await _read_exact(request, length)
            return await _read_stream(request, encoding, limit, reserve)
    except TimeoutError:
        if timeout_s is None:
            raise
        raise BodyTimeout(timeout_s) from None
    except RequestPayloadError as exc:  # a broken chunked framing, a body cut short
        raise BodyUnreadable(str(getattr(exc, "message", exc))) from None
    except ConnectionError:  # the client went away mid-body: no one to answer, no error
        raise BodyUnreadable("the connection closed before the body was complete") from None


async def _read_exact(request: web.Request, length: int) -> bytes:
    buf = bytearray(length)  # one allocation of the announced size
    try:
        got = 0
        with memoryview(buf) as view:
            async for chunk in request.content.iter_any():
                end = got + len(chunk)
                if end > length:  # aiohttp frames by Content-Length; never expected
                    raise BodyUnreadable("more bytes than its Content-Length")
                view[got:end] = chunk
                got = end
        if got != length:
            raise BodyUnreadable(f"cut short at {got} of {length} bytes")
        return bytes(buf)
    finally:
        buf.clear()  # freed now, whatever holds this frame (see the module docstring)


async def _read_stream(request: web.Request, encoding: str, limit: int,
                       reserve: Reserve) -> bytes:
    inflater = None if encoding == "identity" else _Inflater(encoding, limit, reserve)
    body, raw = bytearray(), 0
    try:
        async for chunk in request.content.iter_any():
            raw += len(chunk)
            if raw > limit:
                raise BodyTooLarge(limit, "request body is over the limit")
            if inflater is None:
                reserve(len(chunk))
                body += chunk
            else:
                await inflater.feed(chunk, body)
        if inflater is not None and raw and not inflater.z.eof:
            raise BodyUnreadable("the compressed stream is cut short")
        return bytes(body)
    finally:
        body.clear()
