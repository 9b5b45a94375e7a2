"""The literals a regex needs, and where its matches can start: cheaper regex runs.

A regex's hand-written ``triggers`` say "one of these occurs"; most regexes need more
than that. ``instruction_override_pattern`` cannot match unless the text holds one of
ignore/disregard/..., *and* one of previous/prior/..., *and* one of
instruction/prompt/rules/... — and ordinary prose that says "forget" rarely says the
other two. Running ``re`` over a 2,000-character text costs 50-200 µs per regex (no
literal prefix to jump to, so it tries every offset), while the scanner's phrase
automaton finds every such literal in the same pass it already makes.

:func:`required_literals` reads the regex's parse tree (as RE2's prefilter does) and
returns its requirement in conjunctive form: a list of clauses, each a set of folded
literals one of which must occur. It only ever *weakens* what the regex demands (an
element it cannot read counts as "anything"), so a text the clauses reject cannot
match. Literals are lower-cased and folded like the text the automaton reads; the
scanner applies the clauses to ASCII texts only, where ``re``'s case-insensitive
matching and that lower-casing agree exactly (outside ASCII, ``(?i)s`` also matches
"ſ", whose lower case is not "s").
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from importlib import import_module
from itertools import product
from typing import Any

from llm_observe.scan.normalize import fold

# re's own parser (private, untyped, stable since 3.11 under these names): reading the
# tree it compiles from is the only way to be sure what the regex demands. A Python
# without them gets no pre-filter (P.parse fails inside the readers' try: nothing is
# required, no anchor), so every regex is searched in full: slower, nothing missed.
try:
    C: Any = import_module("re._constants")
    P: Any = import_module("re._parser")
except ImportError:  # pragma: no cover - every supported Python has them
    C = P = None

Clauses = list[frozenset[str]]
# Shorter literals are too common to reject anything and would only add automaton hits.
MIN_LITERAL = 4
_MAX_SET = 64       # strings an exact set may hold before it is cut into a clause
_MAX_CLAUSES = 16   # clauses of an alternative kept when distributing an OR over ANDs
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT)) \
    if C is not None else ()
_ZERO_WIDTH = (C.AT, C.ASSERT, C.ASSERT_NOT) if C is not None else ()


class _Exact:
    """Every string the sub-pattern can consume (a finite, small set)."""

    __slots__ = ("strings",)

    def __init__(self, strings: set[str]) -> None:
        self.strings = strings


def required_literals(pattern: re.Pattern[str]) -> Clauses:
    """Clauses (each: one of these folded literals occurs) every match implies; [] if none."""
    try:
        tree = P.parse(pattern.pattern, pattern.flags)
    except Exception:
        return []
    clauses = set(_clauses(_sequence(list(tree))))
    # A clause that holds every literal of another is implied by it: drop it.
    return sorted((c for c in clauses if not any(o < c for o in clauses)), key=sorted)


def _sequence(items: list[Any]) -> _Exact | Clauses:
    clauses: Clauses = []
    current, exact = {""}, True
    for op, av in items:
        info = _node(op, av)
        if isinstance(info, _Exact):
            if len(current) * len(info.strings) <= _MAX_SET:
                current = {a + b for a, b in product(current, info.strings)}
                continue
            clauses += _clauses(_Exact(current))
            current = info.strings
            continue
        clauses += _clauses(_Exact(current)) + info
        current, exact = {""}, False
    if exact:
        return _Exact(current)
    return clauses + _clauses(_Exact(current))


def _node(op: Any, av: Any) -> _Exact | Clauses:
    if op is C.LITERAL:
        return _Exact({chr(av).lower()}) if av < 128 else []
    if op is C.IN:
        chars = [chr(v).lower() for o, v in av if o is C.LITERAL and v < 128]
        return _Exact(set(chars)) if len(chars) == len(av) else []
    if op is C.SUBPATTERN:
        return _sequence(list(av[-1]))
    if op in _ZERO_WIDTH:  # consumes nothing: the empty string
        return _Exact({""})
    if op is C.BRANCH:
        return _branch([_sequence(list(alt)) for alt in av[1]])
    if op in _REPEATS:
        low, high, body = av
        inner = _sequence(list(body))
        if low == 0:
            # Optional once ("instructions?"): the body or nothing; more is unreadable.
            if high == 1 and isinstance(inner, _Exact):
                return _Exact(inner.strings | {""})
            return []
        return _clauses(inner) if isinstance(inner, _Exact) else inner
    return []  # any other element: readable as "anything"


def _branch(alternatives: list[_Exact | Clauses]) -> _Exact | Clauses:
    if all(isinstance(a, _Exact) for a in alternatives):
        strings = set().union(*(a.strings for a in alternatives if isinstance(a, _Exact)))
        if len(strings) <= _MAX_SET:
            return _Exact(strings)
    # OR of ANDs, distributed: every clause is one clause of each alternative joined.
    result: Clauses = [frozenset()]
    for alt in alternatives:
        clauses = _clauses(alt) if isinstance(alt, _Exact) else alt
        if not clauses:
            return []  # one alternative needs nothing: neither does the branch
        result = [a | b for a in result for b in clauses[:_MAX_CLAUSES]][:_MAX_CLAUSES]
    return result


def _clauses(info: _Exact | Clauses) -> Clauses:
    if not isinstance(info, _Exact):
        return info
    folded = {fold(s).text for s in info.strings}
    if any(len(s.strip()) < MIN_LITERAL for s in folded):
        return []  # one alternative is (nearly) nothing: no requirement
    # "instructions" implies "instruction": keep only the shortest forms.
    kept = frozenset(s for s in folded if not any(o != s and o in s for o in folded))
    return [kept]


# Where a match can start: (literals, least, most) = the match begins between `most`
# and `least` characters before an occurrence of one of the (lower-cased) literals.
Anchor = tuple[frozenset[str], int, int]
_MAX_REACH = 64  # farther than this before its literal, a start is not worth anchoring
_FAIL = "fail"


def anchors(pattern: re.Pattern[str]) -> list[Anchor]:
    """Anchors covering every match's start, or [] when the regex has none usable.

    ``re`` finds a match by trying every offset of the text, ~50 ns each on a
    regex without a literal prefix; trying only the offsets near an anchor's literal
    (found with ``str.find``) gives the same matches (see :func:`finditer`)."""
    try:
        tree = P.parse(pattern.pattern, pattern.flags)
        if tree.getwidth()[0] == 0:
            return []  # empty matches follow finditer's own rules: leave them to it
        found, _, _ = _anchor(list(tree), tree.state, 0, 0)
    except Exception:
        return []
    return found if isinstance(found, list) else []


def _anchor(items: list[Any], state: Any, least: int,
            most: int) -> tuple[list[Anchor] | str | None, int, int]:
    for i, (op, av) in enumerate(items):
        if op in _ZERO_WIDTH:
            continue
        info = _node(op, av)
        if isinstance(info, _Exact) and "" not in info.strings:
            strings = _cross(info.strings, _lead(items[i + 1:]))
            return [(frozenset(strings), least, most)], least, most
        inner: list[Anchor] | str | None = None
        if op is C.SUBPATTERN:
            inner, least, most = _anchor(list(av[-1]), state, least, most)
            if inner is not None:
                return inner, least, most
            continue
        if op in _REPEATS and av[0] >= 1:  # the first repetition starts here
            inner, _, _ = _anchor(list(av[2]), state, least, most)
        elif op is C.BRANCH:
            alts = [_anchor(list(alt), state, least, most)[0] for alt in av[1]]
            if all(isinstance(a, list) for a in alts):
                inner = [x for a in alts if isinstance(a, list) for x in a]
        if inner is not None:
            return inner, least, most
        low, high = P.SubPattern(state, [(op, av)]).getwidth()
        least, most = least + low, most + high
        if most > _MAX_REACH:
            return _FAIL, least, most
    return None, least, most


def _lead(items: list[Any]) -> set[str]:
    """Literal beginnings of a sequence ("" in the set: that path tells nothing)."""
    strings = {""}
    for op, av in items:
        if op in _ZERO_WIDTH:
            continue
        info = _node(op, av)
        if isinstance(info, _Exact) and "" not in info.strings:
            strings = _cross(strings, info.strings)
            continue
        if op is C.BRANCH:
            strings = _cross(strings, set().union(*(_lead(list(alt)) for alt in av[1])))
        elif op is C.SUBPATTERN:
            strings = _cross(strings, _lead(list(av[-1])))
        return strings
    return strings


def _cross(heads: set[str], tails: set[str]) -> set[str]:
    return {a + b for a, b in product(heads, tails)} if len(heads) * len(tails) <= _MAX_SET \
        else heads


def finditer(pattern: re.Pattern[str], where: Iterable[Anchor],
             text: str, lowered: str) -> list[re.Match[str]]:
    """``pattern.finditer(text)``'s matches, trying only the anchors' offsets.

    ``lowered`` is ``text.lower()`` of an ASCII text (same offsets). finditer takes the
    leftmost match at or after the previous match's end; every match starts at a
    candidate, so the leftmost successful candidate is that match. ``match(text, pos)``
    sees the text before ``pos``, so lookbehinds and ``\\b`` behave as in a search."""
    starts: set[int] = set()
    # A Python match() per candidate costs ~15 offsets of re's own scan: a text dense
    # in anchor literals (a hostile "@@@@...") is searched in full instead.
    budget = len(text) // 16 + 64
    for literals, least, most in where:
        for literal in literals:
            at = lowered.find(literal)
            while at >= 0:
                budget -= most - least + 1
                if budget < 0:
                    return list(pattern.finditer(text))
                starts.update(range(max(0, at - most), at - least + 1))
                at = lowered.find(literal, at + 1)
    out: list[re.Match[str]] = []
    end = 0
    for start in sorted(starts):
        if start >= end and (m := pattern.match(text, start)) is not None:
            out.append(m)
            end = m.end()
    return out
