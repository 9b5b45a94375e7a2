"""PII, and text nobody scanned, out of every text on a wire span before it is forwarded.

The rule: a text the collector did not scan is not forwarded raw. The reader
(:mod:`otlp.texts`) lays out every text-bearing key of every dialect into the span's
``prompt_text`` / ``completion_text``, so the scan stage reads all of it, copies
included (a copy keeps its original's offsets). Here each piece of the layout, rebuilt
from the wire span, is rewritten:

- inside the scanned part: PII replaced at the findings' offsets (``[REDACTED:EMAIL]``);
- past the scanned bound (the scan stage reads the first ``max_text_chars`` characters
  of a side): replaced by ``[REDACTED:UNSCANNED]``; a piece that straddles the bound
  keeps its redacted head up to :data:`MARGIN` characters before it, so a secret cut
  in two by the bound (seen in part, perhaps not matched) is not half forwarded;
- the whole side replaced, ``[REDACTED:PII]``, when PII is known but not where (the
  sender flagged it, or the text differs from the one scanned), and
  ``[REDACTED:UNSCANNED]`` when the scan stage failed on the span.

JSON values keep their structure (only the leaf is replaced); a clean key is not touched.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from typing import Any

from llm_observe.otlp import texts
from llm_observe.otlp.textjson import is_binary
from llm_observe.otlp.texts import COMPLETION, PROMPT, Layout, Which
from llm_observe.otlp.wire import decode_value, encode_value
from llm_observe.scan import PII, Finding, redact

REDACTED = "[REDACTED:PII]"  # PII is known to be in a text, but not where
UNSCANNED = "[REDACTED:UNSCANNED]"  # a text, or the part of one, that was not scanned
MARGIN = 1024  # characters dropped before the scanned bound in a piece that crosses it
SCAN_STAGE = "scan"  # the scan processor's name, as the chain marks a span it failed on
SIDES: tuple[Which, Which] = (PROMPT, COMPLETION)


def scanned_chars(span: Any) -> Mapping[str, int]:
    """Characters of ``prompt_text``/``completion_text`` the scan stage read, for a side it
    cut at its bound (``LlmSpan.scanned_chars``; a side not in it was read whole)."""
    scanned: Mapping[str, int] = span.scanned_chars
    return scanned


def needs_redaction(span: Any) -> bool:
    """Whether a span's forwarded copy must be rewritten: PII found or flagged, the scan
    stage failed on it, or a text is longer than the part that was scanned. Cheap: the
    common clean span is decided on its flags."""
    if span.pii_detected or SCAN_STAGE in span.errors:
        return True
    scanned = scanned_chars(span)
    return bool(scanned) and any(
        which in scanned and len(text or "") > scanned[which]
        for which, text in zip(SIDES, (span.prompt_text, span.completion_text), strict=True))


def redact_span(message: Any, span: Any) -> None:
    """Rewrite the texts of ``message`` (the span's ``wire.Span`` copy) from the scan of
    ``span`` (its ``LlmSpan``): its PII findings and how much of each side was scanned."""
    pii = [f for f in span.findings if getattr(f, "type", None) == PII]
    failed = SCAN_STAGE in span.errors
    scanned = scanned_chars(span)
    attrs, events = message.attributes, message.events  # each access builds a wrapper
    sides = texts.both_sides(attrs)
    for which, text in zip(SIDES, (span.prompt_text, span.completion_text), strict=True):
        piece = _plain_piece(message, attrs, events, sides[which])
        lay = None if piece is not None else texts.layout(message, sides[which],
                                                          with_paths=True)
        if lay is not None and not lay.sources:
            continue
        whole = None
        if failed:
            whole = UNSCANNED
        elif span.pii_detected and not pii:
            whole = REDACTED  # flagged by the sender: somewhere, we cannot say where
        elif (len(piece) if lay is None else lay.length) != len(text or ""):
            whole = REDACTED if span.pii_detected else UNSCANNED  # not the text scanned
        findings = [f for f in pii if getattr(f, "field", None) == which] if pii else []
        if lay is None:
            _rewrite_plain(attrs, sides[which].plain_key, piece, findings,
                           scanned.get(which), whole)
        else:
            _rewrite(message, lay, sorted(findings, key=_at), scanned.get(which), whole)


def redact_texts(message: Any, findings: Sequence[Any],
                 scanned: Mapping[str, int] | None = None) -> None:
    """Redact PII from every text on a span (a ``wire.Span``) given the findings of its
    scan; ``scanned`` maps a side to the characters scanned when it was cut (see
    :func:`scanned_chars`). With no PII finding (the sender flagged PII itself) every text
    is replaced whole."""
    pii = [f for f in findings if getattr(f, "type", None) == PII]
    sides = texts.both_sides(message.attributes)
    for which in SIDES:
        lay = texts.layout(message, sides[which], with_paths=True)
        if lay.sources:
            _rewrite(message, lay, _side(pii, which), (scanned or {}).get(which),
                     None if pii else REDACTED)


def _side(findings: list[Any], which: Which) -> list[Any]:
    return sorted((f for f in findings if getattr(f, "field", None) == which), key=_at)


def _at(finding: Any) -> tuple[int, int]:
    return finding.start, finding.end


def _plain_piece(message: Any, attrs: Any, events: Any, found_in: texts.Candidates) -> Any:
    """The side's whole text when it is one plain-string key and no content event (ours,
    OpenLIT's: the common case), else None. Its layout would be that one piece at offset
    0, so :func:`_rewrite_plain` can skip building it (sources, offsets, paths)."""
    key = found_in.plain_key
    if key is None:
        return None
    if events and texts.content_events(message, events)[found_in.which]:
        return None
    value = decode_value(attrs[key])
    if type(value) is not str or not value or is_binary(value):
        return None  # no piece, or one read otherwise (lenient UTF-8, a number ...)
    return value


def _rewrite_plain(attrs: Any, key: Any, piece: str, findings: list[Any],
                   extent: int | None, whole: str | None) -> None:
    """:func:`_rewrite` of a layout that is the single piece ``piece`` of ``key``
    (``findings``: the side's, in any order): the same text written back
    (tests/otlp/test_redact_fast.py compares the two)."""
    if whole is not None:
        new = whole
    elif extent is None or len(piece) <= extent:
        if not findings:
            new = piece
        elif all(f.start >= 0 and f.end <= len(piece) for f in findings):
            new = redact(piece, findings)  # nothing to clip: what _apply would pass it
        else:
            new = _apply(piece, sorted(findings, key=_at), 0, len(piece))
    else:
        keep = min(len(piece), extent - MARGIN)
        new = UNSCANNED if keep <= 0 else _apply(piece, sorted(findings, key=_at), 0,
                                                 keep) + UNSCANNED
    if new != piece or whole is not None:
        attrs[key] = encode_value(new)


def _rewrite(message: Any, lay: Layout, findings: list[Any], extent: int | None,
             whole: str | None) -> None:
    """Write the redacted pieces of one side's layout back onto ``message``."""
    if whole is not None:
        for source in lay.sources:
            texts.write_back(message, source, [whole] * len(source.pieces))
        return
    new = _redacted(lay, findings, extent)
    if not new:
        return
    for source in lay.sources:
        pieces = [new.get(start, piece) for start, piece in zip(source.starts, source.pieces,
                                                                  strict=True)]
        if pieces != source.pieces:
            texts.write_back(message, source, pieces)


def _redacted(lay: Layout, findings: list[Any], extent: int | None) -> dict[int, str]:
    """The rewritten laid-out pieces, by offset (a copy shares its original's offset)."""
    starts = lay.starts
    laid = lay.laid
    hits: dict[int, list[Any]] = {}  # piece index -> findings overlapping it
    for f in findings:
        i = max(0, bisect_right(starts, f.start) - 1)
        while i < len(starts) and starts[i] < f.end:
            if f.start < starts[i] + len(laid[i]):
                hits.setdefault(i, []).append(f)
            i += 1
    new: dict[int, str] = {}
    last = len(starts) - 1 if extent is None else bisect_right(starts, extent) - 1
    for i in hits:
        if i <= last or extent is None:
            new[starts[i]] = _apply(laid[i], hits[i], starts[i], len(laid[i]))
    if extent is None:
        return new
    for i in range(max(0, last), len(starts)):
        start, piece = starts[i], laid[i]
        if start + len(piece) <= extent:
            continue
        keep = min(len(piece), extent - start - MARGIN)
        if keep <= 0:
            new[start] = UNSCANNED
        else:
            new[start] = _apply(piece, hits.get(i, []), start, keep) + UNSCANNED
    return new


def _apply(piece: str, findings: list[Any], start: int, keep: int) -> str:
    """``piece[:keep]`` with the findings (offsets in the side's text) redacted."""
    head = piece[:keep] if keep < len(piece) else piece
    end = start + keep
    local = [Finding(f.type, f.name, max(f.start, start) - start, min(f.end, end) - start)
             for f in findings if f.start < end and f.end > start]
    return redact(head, local) if local else head


def replace_unscanned(message: Any) -> None:
    """Replace every text on a span nobody scanned (a non-LLM span: an agent, tool or
    chain step carrying messages) by :data:`UNSCANNED`."""
    sides = texts.both_sides(message.attributes)
    for which in SIDES:
        lay = texts.layout(message, sides[which], with_paths=True)
        if lay.sources:
            _rewrite(message, lay, [], None, UNSCANNED)
