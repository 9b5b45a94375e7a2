"""The model's WordPiece tokenizer, set to sentence-transformers' window.

``tokenizer.json`` in the weights package carries its own settings: truncation at 128 tokens
and fixed padding to 128. sentence-transformers ignores both: it truncates at the model's
``max_seq_length`` (256, from sentence_bert_config.json) and pads per batch. We override both
here: truncate at 256 (special tokens included, as transformers does) and never pad, because
batching.pack packs the tokens itself.
"""

from __future__ import annotations

from collections.abc import Sequence

from tokenizers import Tokenizer

from llm_observe.embedding.weights import ModelFiles


def load_tokenizer(files: ModelFiles, max_seq_length: int) -> Tokenizer:
    """The fast tokenizer from tokenizer.json, truncating at ``max_seq_length``, no padding."""
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.enable_truncation(max_length=max_seq_length)
    tokenizer.no_padding()
    return tokenizer


def encode(tokenizer: Tokenizer, texts: Sequence[str]) -> list[list[int]]:
    """Token ids of each text, [CLS] ... [SEP], at most the window long."""
    return [e.ids for e in tokenizer.encode_batch(list(texts), add_special_tokens=True)]
