"""The combined verdict (guard/stack.py): shipped references load, agreement of two tiers
outweighs one, it never raises, and a malformed section falls back (None)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_observe.guard.files import load_files
from llm_observe.guard.stack import Reference, Stack, combined, from_manifest


@pytest.fixture(scope="module")
def stack() -> Stack:
    got = from_manifest(load_files().manifest)
    assert got is not None, "guard_model.json ships a stack section"
    return got


def test_shipped_stack_has_references_and_a_threshold_per_role(stack: Stack) -> None:
    assert set(stack.thresholds) == set(stack.references) == {"user", "tool"}
    assert all(0.0 < t < 1.0 for t in stack.thresholds.values())
    assert all(len(r.word) > 1_000 for r in stack.references.values())


def test_higher_scores_never_lower_the_value(stack: Stack) -> None:
    for role in ("user", "tool", "unknown"):
        got = [stack.value(role, 0.3, e, False) for e in (0.01, 0.5, 0.9, 0.999)]
        assert got == sorted(got)
        assert stack.value(role, 0.3, 0.9, True) > stack.value(role, 0.3, 0.9, False)


def test_two_tiers_agreeing_outweigh_one_alone() -> None:
    ref = Reference(tuple(i / 100 for i in range(100)), tuple(i / 100 for i in range(100)), 0.01)
    both = ref.statistic(0.95, 0.95, False)  # each in the top 5 %
    one = ref.statistic(0.0, 0.999, False)   # one above every benign text, one lowest
    assert combined(both) > combined(one)


def test_extreme_scores_do_not_raise(stack: Stack) -> None:
    for word, enc in ((0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0)):
        for hit in (False, True):
            assert 0.0 <= stack.value("user", word, enc, hit) < 1.0


@pytest.mark.parametrize("section", [
    None, [], {"format": "other"}, {"format": "benign-tails/1"},
    {"format": "benign-tails/1", "thresholds": {"user": .5, "tool": .5},
     "reference": {"user": {"word": [0.1], "encoder": [0.1], "hit_rate": 0}}},
    {"format": "benign-tails/1", "thresholds": {"user": .5, "tool": "x"}, "reference": {
        r: {"word": [0.1], "encoder": [0.1], "hit_rate": 0.1} for r in ("user", "tool")}},
])
def test_malformed_section_is_none(section: Any) -> None:
    manifest = json.loads(json.dumps(load_files().manifest))
    manifest["stack"] = section
    assert from_manifest(manifest) is None
