"""The digit gate's measure: the longest run of digits in a text, found in C.

Number-shaped PII (cards, phone numbers, IBANs, IP addresses) needs a run of several
digits; a regex of that kind runs only when the text holds a run at least its
``min_digits`` long (scan/scanner.py). A *run* is digits joined by at most two
separator characters: "4111 1111 1111 1111", "(212) 555-0100", "192.168.0.1" are each
one run. Pure functions, no state.
"""

from __future__ import annotations

import re

# [0-9] rather than \d: the PII regexes use ASCII digits, and the range test is faster.
DIGIT_RUN = re.compile(r"[0-9](?:[ \-./()+]{0,2}[0-9])*")
NOT_DIGITS = str.maketrans("", "", " -./()+")
# The same search on an ASCII text's byte skeleton (digit "0", separator "-", other "x"):
# re finds a literal first character several times faster than a class ([0-9]).
_SKELETON = bytes(b"0"[0] if chr(i) in "0123456789" else b"-"[0] if chr(i) in " -./()+"
                  else b"x"[0] for i in range(256))
_SKELETON_RUN = re.compile(rb"0(?:-{0,2}0)*")
_DIGIT_BYTES = b"0123456789"


def longest_run(text: str, least: int, raw: bytes | None = None) -> int:
    """Digits in ``text``'s longest run, or 0 when it holds fewer than ``least`` digits
    in all (no run can be that long). ``raw``: ``text`` lower-cased as ASCII bytes when
    the caller has them and knows they hold ``least`` digits (normalize.plain_ascii)."""
    if raw is not None or text.isascii():
        if raw is None:
            raw = text.encode("ascii")
            # Most prose ("3pm", "12%") stops here, at two C calls.
            if len(raw) - len(raw.translate(None, _DIGIT_BYTES)) < least:
                return 0
        runs = _SKELETON_RUN.findall(raw.translate(_SKELETON))
        return max(map(bytes.count, runs, [b"0"] * len(runs)), default=0)
    return max((len(run.translate(NOT_DIGITS)) for run in DIGIT_RUN.findall(text)),
               default=0)
