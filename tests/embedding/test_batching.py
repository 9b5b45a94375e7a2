"""Length buckets and packed inputs."""

from __future__ import annotations

import numpy as np

from llm_observe.embedding.batching import pack, plan_groups


def test_every_text_lands_in_exactly_one_group_of_at_most_max_batch() -> None:
    lengths = [5, 250, 7, 9, 256, 30, 31, 2, 100] * 9
    groups = plan_groups(lengths, max_batch=8)
    flat = sorted(i for g in groups for i in g)
    assert flat == list(range(len(lengths)))
    assert all(1 <= len(g) <= 8 for g in groups)


def test_a_long_text_is_not_batched_with_short_ones() -> None:
    lengths = [4, 5, 6, 5, 4, 256]
    groups = plan_groups(lengths, max_batch=32)
    long_group = next(g for g in groups if 5 in g)
    assert long_group == [5]


def test_similar_lengths_share_one_run() -> None:
    assert plan_groups([20, 21, 22, 23], max_batch=32) == [[0, 1, 2, 3]]
    assert plan_groups([], max_batch=32) == []


def test_pack_lays_out_tokens_without_padding() -> None:
    feed = pack([[101, 7, 102], [101, 102]])
    assert feed["input_ids"].tolist() == [101, 7, 102, 101, 102]
    assert feed["position_ids"].tolist() == [0, 1, 2, 0, 1]
    assert feed["key_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert feed["token_index"].tolist() == [0, 1, 2, 3, 4]  # row * width + position
    assert feed["pad_map"].tolist() == [[0, 1, 2], [3, 4, 0]]
    expected = np.array([[1 / 3] * 3 + [0, 0], [0, 0, 0, 0.5, 0.5]])
    assert np.allclose(np.asarray(feed["pool"], dtype=np.float64), expected)
