"""The tokenizer must cut where sentence-transformers cuts, not where tokenizer.json says."""

from __future__ import annotations

import json

from llm_observe.embedding import weights
from llm_observe.embedding.tokenizer import encode, load_tokenizer
from tests.embedding.helpers import Reference


def test_tokenizer_json_ships_a_128_window_that_we_override() -> None:
    files = weights.locate()
    shipped = json.loads(files.tokenizer.read_text(encoding="utf-8"))
    assert shipped["truncation"]["max_length"] == 128
    assert shipped["padding"]["strategy"] == {"Fixed": 128}
    ids = encode(load_tokenizer(files, 256), ["hi", "word " * 1000])
    assert [len(s) for s in ids] == [3, 256]  # no padding; [CLS] ... [SEP] within 256


def test_token_counts_match_sentence_transformers_for_every_fixture_text(
        reference: Reference) -> None:
    files = weights.locate()
    ids = encode(load_tokenizer(files, reference.max_seq_length), reference.texts)
    assert [len(s) for s in ids] == reference.tokens
    assert all(s[0] == 101 and s[-1] == 102 for s in ids)  # [CLS] ... [SEP]
