"""The otlp classes that stay interpreted when the span path is compiled.

mypyc compiles a class to a native class, and a native class cannot subclass ``tuple``
or ``RuntimeError`` (bench/README.md, "Branch speed8": measured, not taken). These live
here, in a module a compiled build would leave out, and are re-exported where they belong
(:class:`otlp.texts.Candidates`, :class:`otlp.inplace.OutOfOrder`); compiled code
builds and reads them as ordinary Python objects, so behaviour is the same either way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from llm_observe.otlp.textkeys import Which
    from llm_observe.otlp.texts import Family


class Candidates(tuple[tuple[int, "Family"], ...]):
    """The (index, family) pairs of one side, plus the one plain key when that is all the
    attributes hold (ours, OpenLIT's: the reader's fast path)."""

    which: Which
    plain_key: str | None
    roles: bool  # a key can say who wrote a piece (else the side's default role: textroles)


class OutOfOrder(RuntimeError):
    """A destination asked for texts an earlier one already took further (encode in
    :data:`otlp.inplace.RANK` order), or came after the one said to be the last
    (:data:`otlp.inplace.SPENT`)."""
