"""The scanner's speed-ups (issue 24) give the findings of the plain definitions.

Each fast path is checked against what it replaces, over a varied corpus: generated
prose, the benchmark's prompts and completions, the benign role texts and their planted
attacks (tests/data/benign_roles.yaml), every injection phrase, and PII-shaped strings.
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path

import ahocorasick
import pytest
import yaml

from bench._common import COMPLETIONS, PROMPTS
from llm_observe.scan import Finding, Scanner, load_patterns
from llm_observe.scan.digits import DIGIT_RUN, NOT_DIGITS
from llm_observe.scan.messages import _placed
from llm_observe.scan.normalize import fold, plain_ascii, same_offsets
from llm_observe.scan.trie import Trie
from tests.scan.prose import generate_prose

SCANNER = Scanner(load_patterns())
PII_SHAPES = [
    "call (212) 555-0100 or +44 20 7946 0958", "card 4111 1111 1111 1111 exp 12/29",
    "ssn 078-05-1120", "ip 192.168.0.1 and 10.0.0.254", "iban GB82 WEST 1234 5698 7654 32",
    "order 12345, qty 3, 4.5 kg", "1-2-3-4", "12--34", "1 2 3", "2024-05-01T10:00:00Z",
    "a1b2c3d4e5", "99.99%", "no digits at all", "", "0", "１２３４５６７８", "٣٤٥٦٧٨٩",
    "x@y.io 555.0100", "token sk-abc123def456ghi789jkl012mno345pq",
]


def corpus() -> list[str]:
    data = yaml.safe_load((Path(__file__).parents[1] / "data" / "benign_roles.yaml")
                          .read_text(encoding="utf-8"))
    role_texts = [item["text"] for key in ("benign", "planted") for item in data.get(key, [])
                  if isinstance(item, dict) and "text" in item]
    phrases = [p for e in SCANNER.patterns.entries for p in e.phrases]
    r = random.Random(24)
    mixed = [f"{r.choice(PROMPTS)} {r.choice(PII_SHAPES)} {r.choice(phrases)}"
             for _ in range(200)]
    return [*generate_prose(20_000, seed=24), *PROMPTS, *COMPLETIONS, *role_texts, *phrases,
            *PII_SHAPES, *mixed]


def longest_digit_run(text: str) -> int:
    """The definition: the most digits in one run of digits joined by <= 2 separators."""
    return max((len(run.translate(NOT_DIGITS)) for run in DIGIT_RUN.findall(text)),
               default=0)


def test_corpus_is_varied() -> None:
    texts = corpus()
    assert len(texts) > 400
    assert sum(longest_digit_run(t) >= 8 for t in texts) > 10  # some open the gates


@pytest.mark.parametrize("text", corpus())
def test_digit_gate_opens_exactly_the_gates_of_the_longest_run(text: str) -> None:
    longest = longest_digit_run(text)
    expected = 0
    for least, bit in SCANNER._digit_gates:
        if least <= longest:
            expected |= bit
    assert SCANNER._digit_gate_bits(text) == expected
    plain = plain_ascii(text)
    if plain is not None:  # the scanner's common case: the gate reads the folded bytes
        _, raw, digits = plain
        assert digits == sum(ch.isdigit() for ch in text)
        closed = digits < SCANNER._digit_gates[0][0]
        assert (0 if closed else SCANNER._digit_gate_bits(text, raw)) == expected


CONTROLS = ["plain text", "two  spaces", "tab\there", "new\nline", "nul\x00", "bell\x07 7",
            "del\x7f", "UPPER 123", "İstanbul", "café 42", "", " ", "1234567890", "a\u200bb"]


@pytest.mark.parametrize("text", [*CONTROLS, *corpus()[::7]])
def test_plain_ascii_is_same_offsets_on_ascii_texts(text: str) -> None:
    plain = plain_ascii(text)
    if not text.isascii():
        assert plain is None
        return
    same = same_offsets(text)
    assert (plain is None) == (same is None), text
    if plain is not None:
        low, raw, digits = plain
        assert (low, raw, digits) == (same, same.encode("ascii"), sum(map(str.isdigit, text)))


@pytest.mark.parametrize("seed", range(4))
def test_word_model_reads_the_given_bytes_as_the_text(seed: int) -> None:
    model = SCANNER.model
    assert model is not None
    phrases = [p for e in SCANNER.patterns.entries for p in e.phrases]
    r = random.Random(seed)
    for text in corpus()[seed::4]:
        folded = fold(f"{text} {r.choice(phrases)}" if r.random() < 0.3 else text).text
        assert model.detect(folded, folded.encode("utf-8")) == model.detect(folded)


def test_trie_order_finds_the_same_matches() -> None:
    # The automaton as built before the frequency order: keys in the scanner's own order.
    plain = ahocorasick.Automaton()
    trie = SCANNER._automaton
    assert trie is not None
    for i, key in enumerate(trie.keys):
        plain.add_word(key, i)
    plain.make_automaton()
    ordered = Trie(list(zip(trie.keys, trie.values, strict=True)), fast=False)
    for text in corpus():
        norm = fold(text).text
        assert sorted(ordered.find(norm)) == sorted(
            (i, end - len(trie.keys[i]) + 1, end + 1) for end, i in plain.iter(norm)), text


def test_placed_is_replace() -> None:
    found = [f for t in corpus()[:300] for f in SCANNER.scan(t, "prompt").findings]
    assert {f.detector for f in found} >= {"phrase", "regex"}
    for f in found:
        assert _placed(f, 7, "user", 2) == replace(f, start=f.start + 7, end=f.end + 7,
                                                   role="user", message=2)
    assert _placed(Finding("pii", "email", 0, 3), 0, "tool", -1).role == "tool"


def test_pii_only_scans_find_what_the_full_automaton_finds() -> None:
    full = Scanner(load_patterns())
    full._pii_automaton = full._automaton  # the scan as it was: every key, every hit
    for text in corpus():
        for every in (True, False):
            assert SCANNER.scan(text, "completion", every_injection=every, injection=False) \
                == full.scan(text, "completion", every_injection=every, injection=False), text
    assert SCANNER._pii_automaton is not None and SCANNER._automaton is not None
    assert len(SCANNER._pii_automaton) < len(SCANNER._automaton) / 2
