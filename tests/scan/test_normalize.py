"""The fold (lowercase, collapsed whitespace, no invisible characters) and its offset map."""

from __future__ import annotations

import random

import pytest

from llm_observe.scan.normalize import fold

ALPHABET = ["a", "B", "c", " ", " ", "\n", "\t", "\r\n", "\u00a0", "\u200b", "\u00ad", "İ", "é",
            "Ω", "1"]


def test_plain_text_is_only_lowercased() -> None:
    folded = fold("Hello World 42")
    assert folded.text == "hello world 42"
    assert folded.span(6, 11) == (6, 11)


@pytest.mark.parametrize(("text", "expected"), [
    ("a  b", "a b"),
    ("a\n\tb", "a b"),
    ("a\u00a0b", "a b"),
    ("ig\u200bnore", "ignore"),
    ("soft\u00adhyphen", "softhyphen"),
    (" \n lead and trail \t", " lead and trail "),
    ("A\u200b \u200bB", "a b"),
])
def test_whitespace_runs_collapse_and_invisibles_vanish(text: str, expected: str) -> None:
    assert fold(text).text == expected


@pytest.mark.parametrize("seed", range(20))
def test_every_folded_character_maps_back_to_its_source(seed: int) -> None:
    rng = random.Random(seed)
    text = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 80)))
    folded = fold(text)
    for i, ch in enumerate(folded.text):
        source = text[folded.to_original(i)]
        if ch == " ":
            assert source.isspace() or source in "\u200b\u00ad"
        else:
            assert ch in source.lower()
    # Mapped offsets never go backwards, so spans stay well-formed.
    mapped = [folded.to_original(i) for i in range(len(folded.text))]
    assert mapped == sorted(mapped)


def test_span_of_a_word_after_collapsed_runs() -> None:
    text = "x \n\n  Word\t\tY"
    folded = fold(text)
    start = folded.text.index("word")
    assert text[slice(*folded.span(start, start + 4))] == "Word"


@pytest.mark.parametrize("text", ["plain ascii text", "tab\there", "bell\x07inside", "del\x7f",
                                  "unit\x1fsep", "two  spaces", "line\nend", "\x00", "ok"])
def test_ascii_texts_fold_as_their_non_ascii_twins(text: str) -> None:
    # ASCII texts take a byte-level printable check; a trailing "é" sends the same
    # text through str.isprintable. Both must fold alike, offsets included.
    ascii_fold, twin = fold(text), fold(text + "\u00e9")
    assert ascii_fold.text + "\u00e9" == twin.text
    assert [ascii_fold.to_original(i) for i in range(len(ascii_fold.text))] == \
        [twin.to_original(i) for i in range(len(ascii_fold.text))]
