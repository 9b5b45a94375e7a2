from __future__ import annotations

import hashlib
import uuid

from llm_observe.processors.sampling import SamplingProcessor, should_sample
from llm_observe.span import LlmSpan


def test_gate_passes_about_one_percent_of_100k_ids() -> None:
    ids = [uuid.uuid4().hex for _ in range(100_000)]
    passed = sum(should_sample(i) for i in ids)
    # 1% of 100k = 1000; binomial sd ~31.5, so +-150 is ~4.7 sd.
    assert 850 <= passed <= 1150


def test_gate_is_deterministic_and_matches_the_spec_rule() -> None:
    for i in range(2000):
        span_id = f"span-{i}"
        expected = int(hashlib.sha256(span_id.encode()).hexdigest(), 16) % 100 == 0
        assert should_sample(span_id) is expected
        assert should_sample(span_id) is should_sample(span_id)
    # Known passing and failing ids, worked out by the rule above.
    passing = [f"span-{i}" for i in range(2000) if should_sample(f"span-{i}")]
    assert 5 <= len(passing) <= 40


def test_processor_marks_only_passing_spans_and_keeps_sender_choice() -> None:
    spans = [LlmSpan(model="m", provider="p", span_id=f"id-{i}") for i in range(500)]
    spans[0].is_sampled = True  # the sender already decided
    SamplingProcessor().process(spans)
    assert spans[0].is_sampled
    for s in spans[1:]:
        assert s.is_sampled is should_sample(s.span_id)


def test_sender_flag_is_kept_and_a_sender_false_does_not_opt_out_of_the_gate() -> None:
    ids = [f"id-{i}" for i in range(2000)]
    flagged = [LlmSpan(model="m", provider="p", span_id=i, is_sampled=True) for i in ids]
    unflagged = [LlmSpan(model="m", provider="p", span_id=i, is_sampled=False) for i in ids]
    SamplingProcessor().process(flagged + unflagged)
    assert all(s.is_sampled for s in flagged)
    assert [s.is_sampled for s in unflagged] == [should_sample(i) for i in ids]
    assert any(s.is_sampled for s in unflagged)
