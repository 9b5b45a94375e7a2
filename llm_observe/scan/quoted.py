"""Attack wording that a text *quotes* is not an attack by that text.

A user asks to translate a slide that reads "Ignore all previous instructions", a thesis
question cites a DAN prompt, a unit test of an input filter lists attack strings, a
fine-tuning script builds ``<|im_start|>`` templates; a retrieved encyclopedia page
gives "Ignore previous instructions and ..." as its example. The phrase and regex tiers
see the same words an attacker types, so each of these was a false alarm.

Contract: :func:`unquoted` drops the phrase and regex injection findings whose match
sits wholly inside a quotation or code, and keeps every other finding:

- **code**: inside a fenced block (an odd number of ```````` ``` ```````` before it) or
  inline backticks on its line;
- **quotation**: between a pair of quotation marks (``"…"``, ``“…”``, ``„…“``, ``«…»``,
  ``‘…’``, ``'…'``, ``「…」``) within one paragraph, where the text outside that pair
  holds at least :data:`MIN_OUTSIDE` non-space characters (a text that is only a quoted
  attack is still one);
- not a data value: a quote opened right after ``=``, ``[``, ``{``, ``,`` or a JSON key's
  ``":`` is a string in data or code (a tool's JSON output), which is where planted
  instructions live, so those stay findings unless inside a code fence.

The classifier still reads the whole text (quoted words included): wrapping an attack in
quotation marks hides it from the phrase tier only, and the word model is the backstop.
Cost: nothing unless an injection phrase or regex matched (rare on benign text).
"""

from __future__ import annotations

import re

from llm_observe.scan.findings import INJECTION, Finding

MIN_OUTSIDE = 24          # characters outside the quotation (ends stripped)
MAX_CHECKED = 32          # findings looked at per text; later ones are kept as they are
_REACH = 600              # how far a quotation or a paragraph is looked for
_PAIRS = {'"': '"', "\u201c": "\u201d", "\u201e": "\u201c", "\u00ab": "\u00bb",
          "\u2018": "\u2019", "'": "'", "\u300c": "\u300d", "`": "`"}
_ENDS_ONLY = frozenset("\u201d\u00bb\u300d")  # a closing mark: the match is past its quotation
_DATA_BEFORE = frozenset("=[{,")
# Every quotation mark: the backward search visits these only, found by ``re`` in C.
_MARKS = re.compile("[\"'`\u201c\u201d\u201e\u00ab\u00bb\u2018\u2019\u300c\u300d]")


def unquoted(text: str, findings: list[Finding], detector: str = "phrase") -> list[Finding]:
    """``findings`` without the injection findings of ``detector`` ("phrase" or "regex")
    quoted in ``text``.

    At most :data:`MAX_CHECKED` of them are looked at (a hostile text of thousands of
    quoted phrases costs no more than that); the rest are kept."""
    if not findings or _MARKS.search(text) is None:
        return findings  # no quotation mark or backtick: nothing can be quoted (one C call)
    for f in findings:
        if f.type == INJECTION and f.detector == detector:
            break
    else:
        return findings
    body = (len(text) - len(text.lstrip()), len(text.rstrip()))
    out, checked = [], 0
    for f in findings:
        if f.type == INJECTION and f.detector == detector and checked < MAX_CHECKED:
            checked += 1
            if quoted(text, f.start, f.end, body):
                continue
        out.append(f)
    return out


def quoted(text: str, start: int, end: int, body: tuple[int, int] | None = None) -> bool:
    """Whether ``text[start:end]`` lies inside code or a quotation (module docstring);
    ``body``: where the text starts and ends without its surrounding white space."""
    lead, tail = body or (len(text) - len(text.lstrip()), len(text.rstrip()))
    if _in_fence(text, start):
        return True
    para = text.rfind("\n\n", 0, start)
    para = para + 2 if para >= 0 else 0
    floor = max(para, start - _REACH)
    limit = text.find("\n\n", end, end + _REACH)
    limit = min(len(text), end + _REACH) if limit < 0 else limit
    for i in reversed([m.start() for m in _MARKS.finditer(text, floor, start)]):
        ch = text[i]
        if ch in _ENDS_ONLY:
            return False
        if not _opens(text, i, para):
            if ch == '"':
                return False  # a closing straight quote: the match is past its quotation
            continue
        close = _closing(text, _PAIRS[ch], end, limit)
        if close >= 0 and not _data_value(text, i) and \
                (i - lead) + (tail - close - 1) >= MIN_OUTSIDE:
            return True
        if ch == '"':
            return False
    return False


def _in_fence(text: str, start: int) -> bool:
    return text.count("```", 0, start) % 2 == 1


def _opens(text: str, i: int, para: int) -> bool:
    # An apostrophe inside a word ("don't", "DAN's") opens nothing.
    if text[i] in "'\u2019" and i > 0 and text[i - 1].isalnum():
        return False
    if text[i] == '"':  # a straight quote opens when an even number precede it here
        return text.count('"', para, i) % 2 == 0
    return True


def _closing(text: str, closer: str, end: int, limit: int) -> int:
    j = text.find(closer, end, limit)
    while j >= 0 and closer in "'\u2019" and j + 1 < len(text) and text[j + 1].isalnum():
        j = text.find(closer, j + 1, limit)  # "it's" inside the quotation
    return j


def _data_value(text: str, i: int) -> bool:
    # A string opened after "=", "[", "{", "," or a JSON key's ":" is data or code.
    j = i - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    if j < 0:
        return False
    return text[j] in _DATA_BEFORE or (text[j] == ":" and j > 0 and text[j - 1] in "\"'")
