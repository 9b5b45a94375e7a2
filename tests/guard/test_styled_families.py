"""The training-only hard negatives of the ``--styled`` recipe (scripts/guard_styled.py):
every row is a benign training row, none copies a validation text (8-word runs), the
jailbreak classes of the persona package are never read, slots are filled, and the build
is deterministic. Needs the pinned wheels in the training cache (no network)."""

from __future__ import annotations

import zipfile

import pytest

from tests.guard.training import CACHE

guard_styled = pytest.importorskip("guard_styled")  # scripts/, put on the path by training

pytestmark = pytest.mark.skipif(
    not all(guard_styled.wheel_file(CACHE, n).exists() for n in guard_styled.WHEELS),
    reason="styled wheels not cached; run scripts/train_guard.py --styled once")


def test_every_row_is_a_benign_training_user_turn_with_its_slots_filled() -> None:
    rows, dropped = guard_styled.rows([], CACHE)
    assert dropped == 0
    assert {(r["split"], r["label"], r["kind"], r["role"]) for r in rows} == {
        ("train", 0, "styled_benign", "user")}
    families = {str(r["family"]) for r in rows}
    assert any(f.startswith("styled_pkg/gpt-prompt/") for f in families)
    assert any(f.startswith("styled_pkg/openevals/") for f in families)
    assert "styled_benign_more/persona_companions" in families
    assert len(rows) > 400
    assert not any(guard_styled._SLOT.search(str(r["text"])) for r in rows)


def test_the_persona_packages_jailbreak_classes_are_never_read() -> None:
    wheel = guard_styled.wheel_file(CACHE, "gpt-prompt")
    names = {n.rsplit("/", 1)[-1] for n in zipfile.ZipFile(wheel).namelist()}
    assert set(guard_styled.SKIP) <= names, "skipping a file that is not there skips nothing"
    read = {n.rsplit("/", 1)[-1] for n in guard_styled.gpt_prompt_files(wheel)}
    assert not read & set(guard_styled.SKIP)
    assert len(read) > 50


def test_a_text_sharing_an_eight_word_run_with_validation_text_is_dropped() -> None:
    clean, _ = guard_styled.rows([], CACHE)
    copied = next(str(r["text"]) for r in clean
                  if r["family"] == "styled_benign_more/game_master")
    words = copied.split()[:9]
    held = [{"text": "Seen elsewhere: " + " ".join(words), "split": "validation"},
            {"text": copied, "split": "train"}]  # a training text does not count
    rows, dropped = guard_styled.rows(held, CACHE)
    assert dropped >= 1
    assert not any(" ".join(words) in str(r["text"]) for r in rows)
    assert len(rows) < len(clean)


def test_the_build_is_deterministic() -> None:
    assert guard_styled.rows([], CACHE) == guard_styled.rows([], CACHE)


def test_a_filler_found_in_validation_text_never_reaches_a_row() -> None:
    import injection_corpus
    import injection_sources

    fillers = [t for f, t in injection_sources.hand_written("benign")
               if len(t) < 200 and "{" not in t and not injection_corpus.held_out(f)]
    clean, _ = guard_styled.rows([], CACHE)
    used = next(t for t in fillers if any(t in str(r["text"]) for r in clean))
    rows, _ = guard_styled.rows([{"text": used, "split": "validation"}], CACHE)
    assert rows, "the other fillers still fill the slots"
    assert not any(used in str(r["text"]) for r in rows)
