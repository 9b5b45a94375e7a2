"""PII out of every prompt/completion copy on a wire span, before it is forwarded."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llm_observe.otlp import texts
from llm_observe.scan import PII, Finding, redact

REDACTED = "[REDACTED:PII]"  # replaces a text copy whose offsets we cannot map


def redact_texts(message: Any, findings: Sequence[Any]) -> None:
    """Redact PII from every prompt/completion copy on a span (a ``wire.Span``).

    The copy the scanner read (the first family) is redacted at the findings'
    offsets; another copy with the same text gets the same treatment; a copy we
    cannot map (a raw JSON body, a differing duplicate) is replaced whole. With
    no usable findings (the sender flagged PII itself) every copy is replaced.
    """
    for which in (texts.PROMPT, texts.COMPLETION):
        pii = [f for f in findings if getattr(f, "type", None) == PII
               and getattr(f, "field", None) == which]
        families = texts.sources(message, which, include_raw=True)
        if not families:
            continue
        if not pii and any(getattr(f, "field", None) in (texts.PROMPT, texts.COMPLETION)
                           for f in findings):
            continue  # findings exist, none in this text: it is clean
        primary = texts.SEPARATOR.join(p for s in families[0] for p in s.pieces)
        for family in families:
            joined = texts.SEPARATOR.join(p for s in family for p in s.pieces)
            exact = bool(pii) and joined == primary
            offset = 0
            for source in family:
                pieces = []
                for piece in source.pieces:
                    pieces.append(_redact_piece(piece, pii, offset) if exact else REDACTED)
                    offset += len(piece) + len(texts.SEPARATOR)
                if pieces != source.pieces:
                    texts.write_back(message, source, pieces)


def _redact_piece(piece: str, findings: list[Any], offset: int) -> str:
    end = offset + len(piece)
    local = [Finding(f.type, f.name, max(f.start, offset) - offset, min(f.end, end) - offset)
             for f in findings if f.start < end and f.end > offset]
    return redact(piece, local) if local else piece
