"""A large OTLP/JSON body, parsed piece by piece so it never holds the GIL for long.

``orjson.loads`` of a 16 MiB request holds the GIL for 0.3-1.2 s (the allocations set off
garbage collections of the whole new tree): the collector's event loop, and with it the
API, ``/metrics`` and every other sender, would stall that long even with the work in a
thread. Here the object structure is walked in Python — every message inside a list or
object is descended into — and only the leaves (a span's name, one attribute list, a
status) are parsed, each by the stdlib's C scanner. The interpreter hands the GIL to the
loop between leaves, each span is encoded as soon as it is read and its objects freed, and
the output equals :func:`llm_observe.otlp.jsonwire.to_protobuf`'s for the same body.
"""

from __future__ import annotations

import json
import re
from typing import Any

from llm_observe.otlp.jsonvalues import Bad, ld
from llm_observe.otlp.jsonwire import Field, encode_field

_WS = re.compile(r"[ \t\n\r]*")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


class _Cursor:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def peek(self) -> str:
        """The next non-blank character ('' at the end); the cursor stops on it."""
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]
        return self.text[self.pos:self.pos + 1]

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise Bad(f"not valid JSON: expected {char!r} at character {self.pos}")
        self.pos += 1

    def value(self) -> Any:
        self.peek()
        try:
            value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        except ValueError as exc:
            raise Bad(f"not valid JSON: {exc}") from None
        return value

    def more(self, close: str) -> bool:
        """After an item: True at ',' (another follows), False at ``close``."""
        char = self.peek()
        self.pos += 1
        if char == ",":
            return True
        if char != close:
            raise Bad(f"not valid JSON: expected ',' or {close!r} at character {self.pos - 1}")
        return False


def _object(cur: _Cursor, table: dict[str, Field]) -> bytes:
    """One message from ``{`` to ``}``: known message fields descended into, leaves parsed."""
    cur.expect("{")
    out: list[bytes] = []
    if cur.peek() == "}":
        cur.pos += 1
        return b""
    while True:
        key = cur.value()
        if type(key) is not str:
            raise Bad("not valid JSON: an object key must be a string")
        cur.expect(":")
        field = table.get(key)
        try:
            if field is not None and field[3] is not None and cur.peek() in ("[", "{"):
                _nested(cur, field, out)
            else:
                value = cur.value()
                if field is not None:
                    encode_field(out, field, value)
        except Bad as exc:
            exc.where.append(key)
            raise
        if not cur.more("}"):
            return b"".join(out)


def _nested(cur: _Cursor, field: Field, out: list[bytes]) -> None:
    tag, _, repeated, sub = field
    assert sub is not None
    if not repeated:
        if cur.peek() != "{":
            raise Bad("must be an object")
        out.append(tag + ld(b"", _object(cur, sub)))
        return
    if cur.peek() != "[":
        raise Bad("must be a list")
    cur.pos += 1
    if cur.peek() == "]":
        cur.pos += 1
        return
    i = 0
    while True:
        try:
            if cur.peek() != "{":
                raise Bad("must be an object")
            out.append(tag + ld(b"", _object(cur, sub)))
        except Bad as exc:
            exc.where.append(f"[{i}]")
            raise
        i += 1
        if not cur.more("]"):
            return


def stream(body: bytes, table: dict[str, Field]) -> bytes:
    """The protobuf bytes of a JSON body (raises :class:`Bad` with where it went wrong)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Bad(f"not valid JSON: not UTF-8 ({exc})") from None
    cur = _Cursor(text.removeprefix("\ufeff"))
    if cur.peek() != "{":
        raise Bad("must be an object")
    out = _object(cur, table)
    if cur.peek():
        raise Bad(f"not valid JSON: extra data at character {cur.pos}")
    return out
