"""The word model's ``--styled`` recipe (scripts/train_injection.py, issue 23, guard9):
it adds guard_styled's hard negatives as benign *training* rows and nothing else; the
validation rows, which every held-out figure is measured on, stay the same row for row.
Needs the pinned wheels in the training cache (no network)."""

from __future__ import annotations

import pytest

from tests.guard.training import CACHE, needs_wheels

guard_styled = pytest.importorskip("guard_styled")  # scripts/, put on the path by training
guard_extra = pytest.importorskip("guard_extra")
train_injection = pytest.importorskip("train_injection")

pytestmark = [needs_wheels, pytest.mark.skipif(
    not all(guard_styled.wheel_file(CACHE, n).exists() for n in guard_styled.WHEELS),
    reason="styled wheels not cached; run scripts/train_guard.py --styled once")]


def test_styled_adds_benign_training_rows_only_and_keeps_validation_row_for_row() -> None:
    plain = train_injection.build(CACHE)
    styled = train_injection.build(CACHE, styled=True)
    assert styled[:len(plain)] == plain
    added = styled[len(plain):]
    assert len(added) > 400
    assert {(e.label, e.split, e.kind) for e in added} == {(0, "train", "styled_benign")}
    assert not {e.family for e in added} & {e.family for e in plain if e.split == "validation"}
    assert train_injection.validation_digest(styled) == train_injection.validation_digest(plain)


def test_tool_styled_adds_tool_side_benign_training_rows_after_the_styled_ones() -> None:
    """``--tool-styled`` (guard10): guard_tool_styled's rows come after guard_styled's, are
    benign training rows of families no validation row has, and share no 8-word run with
    a validation text; validation stays row for row."""
    styled = train_injection.build(CACHE, styled=True)
    both = train_injection.build(CACHE, styled=True, tool_styled=True)
    assert both[:len(styled)] == styled
    added = both[len(styled):]
    assert len(added) > 200
    assert {(e.label, e.split, e.kind) for e in added} == {(0, "train", "tool_styled_benign")}
    assert {e.family.split("/")[1] for e in added} == {"readme", "api_responses", "web_pages",
                                                      "emails", "support_tickets", "chat_logs",
                                                      "ci_logs", "install_guides", "notices",
                                                      "tool_outputs"}
    validation = [e for e in both if e.split == "validation"]
    assert not {e.family for e in added} & {e.family for e in validation}
    held = guard_extra.held_runs([{"text": e.text, "split": e.split} for e in validation])
    assert not any(guard_extra._runs(e.text) & held for e in added)
    assert train_injection.validation_digest(both) == train_injection.validation_digest(styled)
