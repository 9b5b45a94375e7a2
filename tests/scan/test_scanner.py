"""The scanner's gates: cheaper paths for ASCII text that must agree with the general ones."""

from __future__ import annotations

import random

from llm_observe.scan import Scanner, load_patterns
from tests.scan.prose import generate_prose


def test_digit_gate_reads_ascii_text_as_the_digit_run_regex_does() -> None:
    # ASCII texts are measured on a byte skeleton; a trailing "é" (no digit, no
    # separator) sends the same text through the original regex.
    scanner = Scanner(load_patterns())
    rng = random.Random(15)
    shapes = ["4111 1111 1111 1111", "(212) 555-0147", "192.168.0.1", "1 - 2", "3..4",
              "+44 (0)20", "12/31/2024", "v1.2.3", "9", "x", " ", "-", "0--0", "0---0"]
    texts = generate_prose(30_000, seed=15)[:200]
    texts += ["".join(rng.choice(shapes) for _ in range(rng.randrange(1, 5)))
              for _ in range(300)]
    gate = scanner._digit_gate_bits
    assert any(gate(t) for t in texts)
    for text in texts:
        assert gate(text) == gate(text + "\u00e9"), text
