"""Scan one side of a call part by part, each part under its role's rule (scan/roles.py).

The text stays one string (findings' offsets index it, so redaction is unchanged); the
*segments* say who wrote which part. Consecutive parts the same rule applies to are
scanned as one run: every part of the app's and the model's text together (PII only),
each untrusted message on its own (its classifier score is that message's, under its
role's threshold). A side without segments is one run of its default role — today's
single scan, at today's cost.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import fields

from llm_observe.scan import roles as r
from llm_observe.scan.cache import ScanCache
from llm_observe.scan.classifier import InjectionModel
from llm_observe.scan.findings import INJECTION, Finding, ScanResult
from llm_observe.scan.scanner import Scanner

Run = tuple[int, int, str, int, tuple[r.Segment, ...]]  # start, end, role, index, parts
_TRUSTED: tuple[bool, InjectionModel | None] = (False, None)


class RoleScanner:
    """A :class:`Scanner` with the classifier at each untrusted role's threshold
    (``classifier.thresholds`` in patterns.yaml). Immutable but for ``cache`` (a
    :class:`~llm_observe.scan.cache.ScanCache` of each run's result, thread-safe: a run
    seen before under the same rule is not scanned again); share freely."""

    def __init__(self, scanner: Scanner, cache: ScanCache | None = None) -> None:
        self.scanner = scanner
        self.cache = cache
        # Texts this long and longer go through the cache (none without one).
        self._cache_from = cache.min_chars if cache is not None else 1 << 62
        base = scanner.model
        per_role = dict(scanner.patterns.classifier.thresholds)
        self.models: dict[str, InjectionModel | None] = {
            role: base.with_threshold(per_role[role]) if base is not None and role in per_role
            else base for role in (r.USER, r.TOOL)}
        # Per role: (look for injection?, its classifier); a role not here is trusted.
        self._rule: dict[str, tuple[bool, InjectionModel | None]] = {
            role: (True, self.models[r.threshold_role(role)]) for role in r.UNTRUSTED}

    def scan(self, text: str, segments: Sequence[r.Segment] | None, default: str,
             field: str = "text", *, every_injection: bool = True) -> list[Finding]:
        """Every finding in ``text``, each naming its role and message index.

        Injection is looked for in untrusted parts only. ``every_injection=False`` (the
        pipeline's flags): once one untrusted part has an injection finding, later ones
        are scanned for PII only."""
        if not text:
            return []
        if not segments:  # one run of one role (the common case, without _run's layer)
            # The scanner places the findings itself (role, no message): no copies.
            injection, model = self._rule.get(default, _TRUSTED)
            place = (default, -1)
            return list((self.scanner.scan(text, field, every_injection=every_injection,
                                           injection=injection, model=model, place=place)
                         if self._cache_from > len(text) else
                         self._cached(text, field, every_injection, injection, model,
                                      place)).findings)
        out: list[Finding] = []
        look = True  # still looking for injection
        for run in runs(text, segments, default):
            found = self._run(text, run, field, every_injection, look)
            if found and not every_injection and any(f.type == INJECTION for f in found):
                look = False  # the verdict is in: later parts are scanned for PII only
            out.extend(found)
        return out

    def _run(self, text: str, run: Run, field: str, every_injection: bool,
             look: bool) -> list[Finding]:
        start, end, role, index, parts = run
        part = text if start == 0 and end == len(text) else text[start:end]
        untrusted, model = self._rule.get(role, _TRUSTED)
        injection = untrusted and look
        result = (self.scanner.scan(part, field, every_injection=every_injection,
                                    injection=injection, model=model)
                  if self._cache_from > len(part) else
                  self._cached(part, field, every_injection, injection, model))
        if not result.findings:
            return []
        if len(parts) <= 1:  # one part: one role and index
            return [_placed(f, start, role, index) for f in result.findings]
        starts = [p[0] - start for p in parts]
        out = []
        for f in result.findings:
            _, part_end, owner, at = parts[max(0, bisect_right(starts, f.start) - 1)]
            if f.end + start > part_end or (f.type == INJECTION and not r.untrusted(owner)):
                owner, at = role, index  # over several parts (a classifier's, on the run)
            out.append(_placed(f, start, owner, at))
        return out

    def _cached(self, text: str, field: str, every_injection: bool, injection: bool,
                model: InjectionModel | None,
                place: tuple[str | None, int | None] = (None, None)) -> ScanResult:
        assert self.cache is not None

        def run(t: str) -> ScanResult:
            return self.scanner.scan(t, field, every_injection=every_injection,
                                     injection=injection, model=model, place=place)

        # The rule: all the result depends on besides the text. A PII-only scan ignores
        # every_injection and the classifier: the app's texts share a rule per field, place.
        # The models are this object's own (self.models, the scanner's): their ids hold.
        rule = (field, place, every_injection, id(model)) if injection else (field, place)
        return self.cache.scan(text, rule, run)


def _placed(f: Finding, shift: int, role: str, message: int) -> Finding:
    """``f`` moved by ``shift`` characters, naming its role and message. The constructor
    rather than ``dataclasses.replace``: a quarter of the cost, once per finding."""
    return Finding(f.type, f.name, f.start + shift, f.end + shift, f.severity, f.field,
                   f.detector, f.score, role, message)


# _placed passes every field positionally: a field added to Finding must be added there.
if tuple(x.name for x in fields(Finding)) != (
        "type", "name", "start", "end", "severity", "field", "detector", "score", "role",
        "message"):
    raise ImportError("Finding's fields changed; scan/messages.py _placed must follow")


def runs(text: str, segments: Sequence[r.Segment], default: str) -> list[Run]:
    """The runs to scan: ``text`` cut at segment bounds (text outside every segment has
    the default role, separators alone are skipped), consecutive trusted parts joined,
    each untrusted message alone. Segments that overlap or leave the text are cut.

    At most :data:`MAX_RUNS` runs (each is a scan call): past that, the rest of the text
    is one run, untrusted if any part of it is (its findings still name their part)."""
    cover: list[r.Segment] = []
    at, size = 0, len(text)
    for start, end, role, index in segments:
        start, end = min(max(start, at), size), min(end, size)
        if start > at and not text[at:start].isspace():
            cover.append((at, start, default, -1))
        if end > start:
            cover.append((start, end, role, index))
            at = end
        else:
            at = max(at, start)
    if at < size and not text[at:].isspace():
        cover.append((at, size, default, -1))
    out: list[tuple[int, int, str, int, list[r.Segment]]] = []
    for n, seg in enumerate(cover):
        start, end, role, index = seg
        if len(out) == MAX_RUNS:  # the tail: one run
            tail = cover[n - 1:]
            out[-1] = (out[-1][0], tail[-1][1], r.UNKNOWN if any(
                r.untrusted(s[2]) for s in tail) else r.SYSTEM, -1, [*out[-1][4], *cover[n:]])
            break
        if out:
            p_start, _, p_role, p_index, p_parts = out[-1]
            if (r.untrusted(role) and (role, index) == (p_role, p_index)) or (
                    not r.untrusted(role) and not r.untrusted(p_role)):
                p_parts.append(seg)
                out[-1] = (p_start, end, p_role, p_index, p_parts)
                continue
        out.append((start, end, role, index, [seg]))
    return [(start, end, role, index, tuple(parts)) for start, end, role, index, parts in out]


MAX_RUNS = 512
