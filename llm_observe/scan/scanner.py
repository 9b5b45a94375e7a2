"""The matcher: one Aho-Corasick pass for every phrase, gated regexes for the rest.

Cost model (what the design is for): on a ~200-character prompt, running two dozen
regexes with ``re`` costs tens of microseconds, while one pyahocorasick pass over the
folded text costs a few. So the automaton holds, besides every injection phrase, each
regex's *triggers* (literal substrings such as ``@``, ``sk-``, ``akia``); a regex runs
only when one of its triggers occurred, or, for number-shaped PII, when the text holds
a digit run at least ``min_digits`` long (found by one small regex). Ordinary text
therefore pays for the fold, one automaton pass and one digit search. On long texts a
common trigger ("above", "rules") still fires a regex costing 50-200 µs per 2,000
characters, so the automaton also holds the literals each regex cannot match without
(scan/prefilter.py): in an ASCII text, a regex runs only if each of its clauses met one,
and then only at the offsets near its anchor literal, not at every offset.

The word model (scan/classifier.py) then scores the folded text, unless the verdict is in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import reduce
from operator import or_

from llm_observe.scan import trie
from llm_observe.scan.classifier import InjectionModel, shared_model
from llm_observe.scan.digits import longest_run
from llm_observe.scan.findings import INJECTION, Finding, FindingType, ScanResult
from llm_observe.scan.normalize import fold, plain_ascii, same_offsets, same_span
from llm_observe.scan.patterns import PatternEntry, PatternSet
from llm_observe.scan.prefilter import Anchor, anchors, finditer, required_literals
from llm_observe.scan.quoted import unquoted
from llm_observe.scan.validators import VALIDATORS

# A phrase right after a negation is an instruction *against* the attack ("never reveal
# your system prompt" is a normal system prompt), so it is not a finding.
_NEGATIONS = ("not ", "never ", "n't ", "n\u2019t ")
_EMPTY = ScanResult()
CLASSIFIER_FINDING = "injection_classifier"


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _continues_word(text: str, i: int) -> bool:
    # "act as dan's sitter": an apostrophe followed by a letter continues the word.
    ch = text[i]
    return _is_word(ch) or (ch in "'\u2019" and i + 1 < len(text) and _is_word(text[i + 1]))


def _needs_boundary(ch: str) -> bool:
    # Scripts written without spaces (CJK from U+2E80 on) have no word boundaries to check.
    return _is_word(ch) and ord(ch) < 0x2E80


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in spans:
        text = f"{text[:start]}{' ' * (end - start)}{text[end:]}"
    return text


@dataclass(frozen=True, slots=True)
class _Regex:
    type: FindingType
    name: str
    severity: str
    pattern: re.Pattern[str]
    validator: Callable[[str], bool] | None
    # Automaton bit masks, one per clause of prefilter.required_literals: in an ASCII
    # text, the regex runs only if each mask met a literal.
    needs: tuple[int, ...] = ()
    # Where its matches can start (prefilter.anchors): in an ASCII text only those
    # offsets are tried.
    anchors: tuple[Anchor, ...] = ()


# Trie value: (phrase length, phrase entry index or -1, trigger bit mask, check left
# boundary, check right boundary, apply the negation guard).
_Value = tuple[int, int, int, bool, bool, bool]


class Scanner:
    """Finds PII and injection phrases in text; build once per PatternSet, share freely.

    ``model``: the injection classifier; by default the packaged one when the patterns
    file's ``classifier.enabled`` is true (its threshold from the file, else the model's).
    """

    def __init__(self, patterns: PatternSet, model: InjectionModel | None = None) -> None:
        self.patterns = patterns
        config = patterns.classifier
        if model is None and config.enabled:
            model = shared_model(config.threshold)
        self.model = model
        self._entries: list[PatternEntry] = list(patterns.entries)
        self._regexes: list[_Regex] = []
        self._always = 0          # bits of regexes without any gate
        self._both = 0            # bits of regexes gated by triggers AND min_digits
        self._digits_only = 0     # bits of regexes gated by min_digits alone
        self._digit_gates: list[tuple[int, int]] = []  # (min_digits, bit), ascending
        self._injection = 0       # bits of injection regexes
        keys: dict[str, list[int]] = {}  # key -> [phrase entry index, trigger mask]
        clauses: list[list[frozenset[str]]] = []
        for index, entry in enumerate(self._entries):
            for phrase in entry.phrases:
                keys.setdefault(phrase, [-1, 0])[0] = index
            if entry.regex is None:
                continue
            bit = 1 << len(self._regexes)
            self._regexes.append(_Regex(
                entry.kind, entry.name, entry.severity, entry.regex,
                VALIDATORS[entry.validator] if entry.validator else None,
                anchors=tuple(anchors(entry.regex))))
            clauses.append(required_literals(entry.regex))
            if entry.kind == INJECTION:
                self._injection |= bit
            for trigger in entry.triggers:
                keys.setdefault(trigger, [-1, 0])[1] |= bit
            if entry.min_digits is not None:
                self._digit_gates.append((entry.min_digits, bit))
                if entry.triggers:
                    self._both |= bit
                else:
                    self._digits_only |= bit
            elif not entry.triggers:
                self._always |= bit
        self._digit_gates.sort()
        self._least_digits = self._digit_gates[0][0] if self._digit_gates else 1 << 62
        self._regex_bits = (1 << len(self._regexes)) - 1
        self._add_literals(keys, clauses)
        values: list[tuple[str, _Value]] = [
            (key, (len(key), index, mask, _needs_boundary(key[0]), _needs_boundary(key[-1]),
                   index >= 0 and self._entries[index].kind == "injection"))
            for key, (index, mask) in keys.items()]
        self._automaton = trie.build(values)
        # A PII-only scan (the app's and the model's text, scan/roles.py) walks the keys
        # that are PII phrases or gate a PII regex (bits of PII regexes and their
        # literals): injection keys would only add hits such a scan drops.
        pii = 0
        for i, rx in enumerate(self._regexes):
            if rx.type != INJECTION:
                pii |= reduce(or_, rx.needs, 1 << i)
        self._pii_automaton = trie.build([(k, v) for k, v in values
                                          if v[2] & pii or (v[1] >= 0 and not v[5])])

    def _add_literals(self, keys: dict[str, list[int]],
                      clauses: list[list[frozenset[str]]]) -> None:
        # Literal bits sit above the regex bits, so one automaton mask carries both.
        bits: dict[str, int] = {}
        for i, regex_clauses in enumerate(clauses):
            needs = []
            for clause in regex_clauses:
                mask = 0
                for literal in clause:
                    bit = bits.setdefault(literal, 1 << (len(self._regexes) + len(bits)))
                    keys.setdefault(literal, [-1, 0])[1] |= bit
                    mask |= bit
                needs.append(mask)
            self._regexes[i] = replace(self._regexes[i], needs=tuple(needs))

    def scan(self, text: str, field: str = "text", *, every_injection: bool = True,
             injection: bool = True, model: InjectionModel | None = None,
             place: tuple[str | None, int | None] = (None, None)) -> ScanResult:
        """Scan ``text``; findings' offsets index ``text`` itself; ``field`` labels them,
        ``place`` gives their role and message index (scan/messages.py: none to copy).

        ``every_injection=False`` is for callers that need the injection *verdict* and
        every PII finding (the pipeline: flags, redaction) but not every injection
        occurrence: once a phrase has shown the text is an injection attempt, the
        injection regexes (the slowest patterns) are skipped, as they cannot change it.
        ``injection=False`` looks for PII only (text an app wrote, a model's answer:
        scan/roles.py); ``model`` replaces the scanner's classifier (another threshold).
        """
        if not text:
            return _EMPTY
        findings: list[Finding] = []
        triggered = 0
        norm = ""
        negated: list[tuple[int, int]] = []  # folded spans of phrases after a negation
        automaton = self._automaton if injection else self._pii_automaton
        raw: bytes | None = None  # the folded text's ASCII bytes (plain_ascii's case)
        digits = -1  # how many digits the text holds, when known
        if automaton is not None:
            to_original: Callable[[int, int], tuple[int, int]] = same_span
            plain = plain_ascii(text)  # the common case: the text's own offsets
            if plain is not None:
                norm, raw, digits = plain
            else:
                norm = same_offsets(text) or ""
                if not norm:
                    folded = fold(text)
                    norm, to_original = folded.text, folded.span
            last = len(norm) - 1
            spans: list[tuple[int, int, int]] = []
            values = automaton.values
            for key, start, stop in automaton.find(norm):
                _, index, mask, left, right, guard = values[key]
                triggered |= mask
                if index < 0:
                    continue
                end = stop - 1
                if (left and start > 0 and _is_word(norm[start - 1])) or \
                        (right and end < last and _continues_word(norm, end + 1)):
                    continue
                if guard and (not injection or
                              norm[max(0, start - 7):start].endswith(_NEGATIONS)):
                    negated.append((start, end + 1))
                    continue
                spans.append((start, end + 1, index))
            if spans:
                findings = unquoted(text, self._phrase_findings(spans, to_original, field,
                                                                place))
        # Injection regexes are the fallback for forms the phrases miss: one already
        # covered by a phrase finding would report the same occurrence twice.
        covered = [(f.start, f.end) for f in findings if f.type == INJECTION] if findings else []
        found, triggered = triggered, triggered & self._regex_bits
        ascii_text = raw is not None or text.isascii()
        lowered = norm if raw is not None else ""  # plain_ascii's fold is text.lower()
        if not ascii_text:
            found = -1  # every literal "found": the pre-filter is for ASCII texts only
        both = self._both
        fired = self._always | (triggered & ~both)
        # A known digit count below the lowest gate opens none (most prose: "3pm", "12%").
        if (self._digits_only or triggered & both) and (
                digits < 0 or digits >= self._least_digits):
            fired |= self._digit_gate_bits(text, raw) & (self._digits_only | triggered)
        if (covered and not every_injection) or not injection:
            fired &= ~self._injection
        while fired:
            low = fired & -fired
            fired ^= low
            rx = self._regexes[low.bit_length() - 1]
            if not all(found & need for need in rx.needs):
                continue
            matches: Iterable[re.Match[str]]
            if rx.anchors and ascii_text:
                lowered = lowered or text.lower()
                matches = finditer(rx.pattern, rx.anchors, text, lowered)
            else:
                matches = rx.pattern.finditer(text)
            for m in matches:
                start, end = m.span()
                if start == end or (rx.validator is not None and not rx.validator(m.group())):
                    continue
                if rx.type == INJECTION and any(s < end and start < e for s, e in covered):
                    continue
                findings.append(Finding(rx.type, rx.name, start, end, rx.severity, field,
                                        "regex", None, *place))
        if findings:
            findings = unquoted(text, findings, "regex")
        model = (model or self.model) if injection else None
        if model is not None and (every_injection or not any(
                f.type == INJECTION for f in findings)):
            # A negated attack phrase ("never ignore previous instructions") is a rule
            # against the attack; its words are blanked so the classifier does not read
            # them as one. The rest of the text is still scored, so prefixing a negated
            # phrase to an attack hides nothing.
            score = (model.detect(_blank(norm, negated)) if negated
                     else model.detect(norm, raw) if raw is not None
                     else model.detect(norm or fold(text).text))
            if score is not None:
                findings.append(Finding(INJECTION, CLASSIFIER_FINDING, 0, len(text), "high",
                                        field, "classifier", round(score, 4), *place))
        if not findings:
            return _EMPTY
        findings.sort(key=lambda f: (f.start, f.end))
        return ScanResult(tuple(findings))

    def _phrase_findings(self, spans: list[tuple[int, int, int]],
                         to_original: Callable[[int, int], tuple[int, int]],
                         field: str, place: tuple[str | None, int | None]) -> list[Finding]:
        # Keep one finding per occurrence: a phrase inside a longer phrase of the same
        # entry ("disregard the above" in "disregard the above instructions") is dropped.
        spans.sort(key=lambda s: (s[0], -s[1]))
        out: list[Finding] = []
        reach: dict[int, int] = {}
        for start, end, index in spans:
            if reach.get(index, -1) >= end:
                continue
            reach[index] = end
            entry = self._entries[index]
            o_start, o_end = to_original(start, end)
            out.append(Finding(entry.kind, entry.name, o_start, o_end, entry.severity, field,
                               "phrase", None, *place))
        return out

    def _digit_gate_bits(self, text: str, raw: bytes | None = None) -> int:
        """The bits of the digit-gated regexes whose gate ``text``'s longest digit run
        opens; ``raw``: ``text`` lower-cased as ASCII bytes, holding enough digits for
        the lowest gate (the scanner counted them: plain_ascii)."""
        longest = longest_run(text, self._least_digits, raw)
        bits = 0
        for min_digits, bit in self._digit_gates:
            if min_digits > longest:
                break
            bits |= bit
        return bits
