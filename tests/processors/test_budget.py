"""TokenBucket: the embedding budget's rate and burst, on a stepped clock."""

from __future__ import annotations

import pytest

from llm_observe.processors.budget import LONG_CHARS, PromptCost, TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_starts_full_and_grants_only_what_it_holds() -> None:
    bucket = TokenBucket(rate=10, capacity=5, clock=Clock())
    assert bucket.try_take(3)
    assert not bucket.try_take(3)  # all or nothing
    assert bucket.try_take(2)
    assert not bucket.try_take(1)


def test_refills_at_the_rate_up_to_the_capacity() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=10, capacity=5, clock=clock)
    assert bucket.try_take(5)
    clock.now += 0.25
    assert bucket.level == 2.5
    assert not bucket.try_take(3)
    clock.now += 3600
    assert bucket.level == 5


def test_keep_leaves_a_reserve_for_other_takers() -> None:
    bucket = TokenBucket(rate=1, capacity=10, clock=Clock())
    assert bucket.try_take(6, keep=4)
    assert not bucket.try_take(1, keep=4)
    assert bucket.try_take(4)


def test_spend_may_leave_a_debt_that_the_refill_repays() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=0.5, capacity=0.5, clock=clock)
    bucket.spend(2.0)
    assert bucket.level == -1.5
    clock.now += 3.0
    assert bucket.level == 0.0
    clock.now += 10.0
    assert bucket.level == 0.5


def test_put_back_returns_unspent_tokens_without_passing_the_capacity() -> None:
    bucket = TokenBucket(rate=1, capacity=10, clock=Clock())
    assert bucket.try_take(3)
    bucket.put_back(5)
    assert bucket.level == 10


def test_a_clock_stepping_back_neither_drains_nor_refills() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=10, capacity=10, clock=clock)
    assert bucket.try_take(10)
    clock.now -= 5
    assert bucket.level == 0
    clock.now += 5.1  # only 0.1 s past the last reading: one token
    assert bucket.level == pytest.approx(1.0)


@pytest.mark.parametrize(("rate", "capacity"), [(0, 5), (-1, 5), (1, 0)])
def test_rejects_a_bucket_that_could_never_grant(rate: float, capacity: float) -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate=rate, capacity=capacity, clock=Clock())


def test_a_prompt_costs_one_unit_per_32_tokens_up_to_the_window() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text.split())

    cost = PromptCost(unit_tokens=32, count_tokens=count)
    assert [cost("w " * n) for n in (1, 32, 33, 64, 65, 256, 400)] == [1, 1, 2, 2, 3, 8, 8]
    assert cost("x" * (LONG_CHARS + 1)) == cost.max_units == 8
    assert len(counted) == 7  # the long text is charged in full without tokenizing


def test_the_default_cost_counts_with_the_model_tokenizer() -> None:
    cost = PromptCost()
    assert cost("What is our refund policy?") == 1  # 9 tokens with [CLS] and [SEP]
    assert cost("refund " * 20) == 2                 # re ##fund: 42 tokens
    assert cost("한" * 30) == 3                       # 3 tokens a syllable: 92
