"""LangChain chat models: BaseChatModel.invoke / ainvoke patched once covers subclasses."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from llm_observe import instrument, semconv
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans


def chat(fake: FakeProvider) -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=fake.openai_base_url, api_key="k",  # type: ignore[arg-type]
                      max_retries=0)


def test_chat_openai_invoke_is_one_span(instrumented: Spans, known_url: FakeProvider) -> None:
    answer = chat(known_url).invoke([SystemMessage("Be brief."), HumanMessage("lc hello")])
    assert answer.content == "You said: lc hello"
    assert len(instrumented.all()) == 1  # not one for LangChain plus one for the OpenAI SDK
    attrs = instrumented.one()
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "openai"
    assert attrs[semconv.GEN_AI_REQUEST_MODEL] == "gpt-4o-mini"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] == 4
    assert attrs[semconv.FINISH_REASON] == "stop"
    assert attrs[semconv.PROMPT_TEXT] == "system: Be brief.\nuser: lc hello"


async def test_chat_openai_ainvoke(instrumented: Spans, fake: FakeProvider) -> None:
    answer = await chat(fake).ainvoke("async hello")
    assert answer.content == "You said: async hello"
    assert instrumented.one()[semconv.COMPLETION_TEXT] == "You said: async hello"


def test_any_subclass_is_covered(instrumented: Spans) -> None:
    model = FakeListChatModel(responses=["canned answer"])
    assert model.invoke("hi").content == "canned answer"
    attrs = instrumented.one()
    assert attrs[semconv.COMPLETION_TEXT] == "canned answer"
    # No usage from this model: counted locally so the span never has zero tokens.
    assert attrs[semconv.GEN_AI_USAGE_OUTPUT_TOKENS] > 0  # type: ignore[operator]
    assert attrs[semconv.TOKEN_COUNT_METHOD] == semconv.METHOD_HEURISTIC


def test_patch_call_uninstrument_call(spans: Spans, fake: FakeProvider) -> None:
    from langchain_core.language_models.chat_models import BaseChatModel

    original = vars(BaseChatModel)["invoke"]
    instrument.init_auto_instrumentation()
    chat(fake).invoke("one")
    assert len(spans.llm()) == 1
    instrument.uninstrument_all()
    assert vars(BaseChatModel)["invoke"] is original
    spans.clear()
    chat(fake).invoke("two")
    assert spans.all() == []
