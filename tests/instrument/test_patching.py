"""The Patcher port, the registry, idempotent init and failure isolation."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import openai
import pytest

from llm_observe import instrument, semconv
from llm_observe.instrument import patching
from llm_observe.instrument.calls import CallSpec, sync_wrapper
from llm_observe.instrument.extract import openai as openai_extract
from llm_observe.instrument.extract._common import Request, TextAccumulator
from tests.fakes import FakeProvider
from tests.instrument.conftest import Spans


class Recorder:
    """A custom Patcher that records what the registry asks of it."""

    def __init__(self, name: str, available: bool = True, fail: bool = False) -> None:
        self.name = name
        self._available = available
        self._fail = fail
        self.calls: list[str] = []

    def available(self) -> bool:
        return self._available

    def patch(self) -> None:
        self.calls.append("patch")
        if self._fail:
            raise RuntimeError("cannot patch")

    def unpatch(self) -> None:
        self.calls.append("unpatch")


@pytest.fixture
def clean_registry() -> Any:
    saved = dict(patching._registry), dict(patching._status)
    yield
    instrument.uninstrument_all()
    patching._registry.clear()
    patching._registry.update(saved[0])
    patching._status.clear()
    patching._status.update(saved[1])


def test_builtin_patchers_implement_the_protocol() -> None:
    for name in ("openai", "anthropic", "litellm", "langchain", "httpx", "httpx2", "requests"):
        assert isinstance(patching._registry[name], instrument.Patcher)


def test_init_is_idempotent_and_reports_status(spans: Spans, clean_registry: None) -> None:
    custom = Recorder("custom")
    missing = Recorder("missing", available=False)
    instrument.register_patcher(custom)
    instrument.register_patcher(missing)
    first = instrument.init_auto_instrumentation()
    second = instrument.init_auto_instrumentation()
    assert custom.calls == ["patch"]  # the second init changed nothing
    assert first == second
    assert first["custom"] == "patched"
    assert first["missing"] == "not installed"  # skipped, not an error
    assert first["openai"] in {"patched", "waiting for import"}
    assert instrument.is_instrumented()
    instrument.uninstrument_all()
    assert custom.calls == ["patch", "unpatch"]
    assert not instrument.is_instrumented()
    assert set(instrument.instrumentation_status().values()) == {"off"}


def test_a_failing_patcher_does_not_stop_the_others(instrumented: Spans,
                                                    clean_registry: None,
                                                    fake: FakeProvider) -> None:
    broken = Recorder("broken", fail=True)
    instrument.register_patcher(broken)  # instrumentation is on: patched at once
    assert instrument.instrumentation_status()["broken"] == "failed"
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert len(instrumented.llm()) == 1


def test_custom_table_patcher(spans: Spans, clean_registry: None, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A custom target made of a Wrap table: patched when its module is first imported."""
    (tmp_path / "my_llm_sdk.py").write_text(textwrap.dedent('''
        class Client:
            def generate(self, prompt, model="tiny-1"):
                return {"model": model, "text": prompt[::-1],
                        "usage": {"prompt_tokens": 3, "completion_tokens": 2}}
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = CallSpec(
        provider=lambda _client: "my_llm",
        request=lambda _c, args, kwargs: Request(kwargs.get("model", "tiny-1"), args[0], False),
        response=openai_extract.response,
        accumulator=TextAccumulator,
    )
    patcher = instrument.TablePatcher("my_llm", "my_llm_sdk", [
        instrument.Wrap("my_llm_sdk", "Client", "generate", sync_wrapper(spec))])
    instrument.register_patcher(patcher)
    assert instrument.init_auto_instrumentation()["my_llm"] == "waiting for import"
    import my_llm_sdk

    assert my_llm_sdk.Client().generate("abc")["text"] == "cba"
    assert instrument.instrumentation_status()["my_llm"] == "patched"
    attrs = spans.one()
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "my_llm"
    assert attrs[semconv.GEN_AI_USAGE_INPUT_TOKENS] == 3
    sys.modules.pop("my_llm_sdk", None)


def test_our_failure_never_breaks_the_call(instrumented: Spans, fake: FakeProvider,
                                           monkeypatch: pytest.MonkeyPatch,
                                           caplog: pytest.LogCaptureFixture) -> None:
    def broken(*_: Any) -> None:
        raise ZeroDivisionError("bug in llm-observe")

    monkeypatch.setattr(openai_extract, "_response_object", broken)  # reading the answer
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    answer = client.chat.completions.create(model="gpt-4o",
                                            messages=[{"role": "user", "content": "x"}])
    assert answer.choices[0].message.content == "You said: x"  # the user's call is fine
    assert len(instrumented.llm()) == 1  # and still recorded (without usage)
    assert "instrumentation failed" in caplog.text


def test_broken_request_reading_passes_the_call_through(instrumented: Spans,
                                                        fake: FakeProvider,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any) -> None:
        raise TypeError("unexpected SDK shape")

    monkeypatch.setattr(openai_extract, "request", broken)
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key="k")
    answer = client.chat.completions.create(model="gpt-4o",
                                            messages=[{"role": "user", "content": "y"}])
    assert answer.choices[0].message.content == "You said: y"
    assert instrumented.llm() == []


def test_a_lazy_stream_that_sends_its_request_on_first_read_is_one_span(
        instrumented: Spans, clean_registry: None, known_url: FakeProvider, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # LiteLLM's Gemini/Vertex streams send the HTTP request on the first next(), after the
    # SDK call returned: the request still belongs to the call, not to the httpx catch-all.
    (tmp_path / "lazy_llm_sdk.py").write_text(textwrap.dedent(f'''
        import httpx

        class Client:
            def generate(self, prompt, stream=True):
                def chunks():
                    reply = httpx.post("{known_url.openai_base_url}/chat/completions",
                                       json={{"model": "gpt-4o", "messages":
                                             [{{"role": "user", "content": prompt}}]}})
                    yield from reply.json()["choices"][0]["message"]["content"].split()
                return chunks()
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = CallSpec(provider=lambda _client: "lazy_llm",
                    request=lambda _c, args, kwargs: Request("lazy-1", args[0], True),
                    response=openai_extract.response, accumulator=TextAccumulator)
    instrument.register_patcher(instrument.TablePatcher("lazy_llm", "lazy_llm_sdk", [
        instrument.Wrap("lazy_llm_sdk", "Client", "generate", sync_wrapper(spec))]))
    import lazy_llm_sdk

    assert list(lazy_llm_sdk.Client().generate("hi there")) == ["You", "said:", "hi", "there"]
    attrs = instrumented.one()  # one span, the SDK call's, not a second from httpx
    assert attrs[semconv.GEN_AI_PROVIDER_NAME] == "lazy_llm"
    sys.modules.pop("lazy_llm_sdk", None)
