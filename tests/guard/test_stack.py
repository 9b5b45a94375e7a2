"""The stacked verdict (guard/stack.py): shipped weights load, read the tiers' scores the
way scripts/guard_stack.py fitted them, and a malformed section falls back (None)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from llm_observe.guard.files import load_files
from llm_observe.guard.stack import FEATURES, Stack, features, from_manifest


@pytest.fixture(scope="module")
def stack() -> Stack:
    got = from_manifest(load_files().manifest)
    assert got is not None, "guard_model.json ships a stack section"
    return got


def test_shipped_stack_has_every_feature_and_a_threshold_per_role(stack: Stack) -> None:
    assert len(stack.weights) == len(FEATURES)
    assert set(stack.thresholds) == {"user", "tool"}
    assert all(0.0 < t < 1.0 for t in stack.thresholds.values())


def test_more_encoder_certainty_never_lowers_the_verdict(stack: Stack) -> None:
    for length in (40, 500, 5_000):
        got = [stack.probability(0.3, e, False, length) for e in (0.01, 0.5, 0.9, 0.999)]
        assert got == sorted(got), length


def test_extreme_scores_and_lengths_do_not_raise(stack: Stack) -> None:
    for word, enc in ((0.0, 0.0), (1.0, 1.0), (0.0, 1.0), (1.0, 0.0)):
        for length in (0, 1, 299, 300, 800, 801, 10**9):
            assert 0.0 <= stack.probability(word, enc, True, length) <= 1.0


def test_length_bands_are_the_documented_ones() -> None:
    assert features(0.5, 0.5, False, 299)[3:5] == [1.0, 0.0]
    assert features(0.5, 0.5, False, 300)[3:5] == [0.0, 1.0]
    assert features(0.5, 0.5, False, 800)[3:5] == [0.0, 1.0]
    assert features(0.5, 0.5, False, 801)[3:5] == [0.0, 0.0]


@pytest.mark.parametrize("section", [
    None, [], {"features": list(FEATURES)},
    {"features": ["encoder"], "weights": [1.0], "bias": 0, "thresholds": {"user": .5, "tool": .5}},
    {"features": list(FEATURES), "weights": ["x"] * len(FEATURES), "bias": 0,
     "thresholds": {"user": .5, "tool": .5}},
])
def test_malformed_section_is_none(section: Any) -> None:
    manifest = json.loads(json.dumps(load_files().manifest))
    manifest["stack"] = section
    assert from_manifest(manifest) is None
