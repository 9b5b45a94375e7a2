"""Redaction: replace PII spans with ``[REDACTED:<NAME>]``."""

from __future__ import annotations

from collections.abc import Iterable

from llm_observe.scan.findings import PII, Finding


def redact(text: str, findings: Iterable[Finding]) -> str:
    """Return ``text`` with every PII finding's span replaced by ``[REDACTED:<NAME>]``.

    Overlapping spans are merged into one redaction labelled with the longest finding
    among them (the earliest on a tie), so no piece of a secret survives between two
    tags. Injection findings are left in place: they are not secrets. The findings
    must come from scanning this same ``text``.
    """
    spans = sorted(((f.start, f.end, f.name) for f in findings
                    if f.type == PII and 0 <= f.start < f.end <= len(text)),
                   key=lambda s: (s[0], -s[1]))
    merged: list[tuple[int, int, str, int]] = []  # start, end, label, label's length
    for start, end, name in spans:
        if merged and start < merged[-1][1]:
            m_start, m_end, label, label_len = merged[-1]
            if end - start > label_len:
                label, label_len = name, end - start
            merged[-1] = (m_start, max(m_end, end), label, label_len)
        else:
            merged.append((start, end, name, end - start))
    out: list[str] = []
    pos = 0
    for start, end, label, _ in merged:
        out.append(text[pos:start])
        out.append(f"[REDACTED:{label.upper()}]")
        pos = end
    out.append(text[pos:])
    return "".join(out)
