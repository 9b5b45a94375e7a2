"""The price structures' counts from the patched ``openai`` and ``anthropic`` SDKs: the
fake provider reports reasoning tokens, the flex tier and 1-hour cache writes as the real
APIs do; the library's span, mapped as the receiver maps it, prices to the vendors' worked
figures (tests/pricing/test_known_answers_doors.py)."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest

from llm_observe.api.bridge import to_batch
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans
from tests.pricing.test_known_answers_doors import CLAUDE_1H, O3_FLEX, _priced


@pytest.fixture
def fake() -> Iterator[FakeProvider]:
    with FakeProvider() as f:
        yield f


def test_patched_sdks_report_the_counts(instrumented: Spans, fake: FakeProvider) -> None:
    fake.settings.prompt_tokens, fake.settings.completion_tokens = 10_000, 1_000
    fake.settings.usage_extra = {
        "prompt_tokens_details": {"cached_tokens": 2_000, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 700, "audio_tokens": 0}}
    fake.settings.response_extra = {"service_tier": "flex"}
    openai.OpenAI(base_url=fake.openai_base_url, api_key="k").chat.completions.create(
        model="o3", messages=[{"role": "user", "content": "hi"}], service_tier="flex")
    fake.settings.prompt_tokens, fake.settings.completion_tokens = 1_000, 500
    fake.settings.usage_extra = {
        "cache_read_input_tokens": 10_000, "cache_creation_input_tokens": 6_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 2_000,
                           "ephemeral_1h_input_tokens": 4_000}}
    fake.settings.response_extra = {}
    anthropic.Anthropic(base_url=fake.base_url, api_key="k").messages.create(
        model="claude-sonnet-4-5", max_tokens=500, messages=[{"role": "user", "content": "hi"}])
    o3, claude = (to_batch(s)[0] for s in instrumented.llm())
    assert (o3.reasoning_tokens, o3.service_tier, o3.cache_read_tokens) == (700, "flex", 2_000)
    assert (claude.prompt_tokens, claude.cache_write_1h_tokens) == (17_000, 4_000)
    assert (_priced(o3), _priced(claude)) == (O3_FLEX, CLAUDE_1H)
