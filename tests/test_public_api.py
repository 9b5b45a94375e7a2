"""The package root is the public in-process API (spec 4.15), as the README uses it."""

from __future__ import annotations

import json
import subprocess
import sys

import llm_observe
import llm_observe.instrument as instrument
from tests.fakes import FakeProvider


def test_every_instrumentation_name_is_importable_from_the_package_root() -> None:
    assert set(instrument.__all__) <= set(llm_observe.__all__)
    for name in llm_observe.__all__:
        assert getattr(llm_observe, name) is not None, name
    assert llm_observe.init_auto_instrumentation is instrument.init_auto_instrumentation
    assert llm_observe.observe is instrument.observe


def test_the_readme_quick_start_runs_and_import_stays_light() -> None:
    # A fresh interpreter: `import llm_observe` must not pull in the OTel SDK, and the
    # README's three lines must work as written with whichever openai major is installed.
    # Targets already imported are patched at once: openai 1.x-2.x bring httpx, 3.x httpx2.
    # openai 3 imports its resources lazily: "waiting for import" is then the truth, and
    # the first call through the client must still make its span.
    code = (
        "import json, sys\n"
        "import llm_observe\n"
        "assert 'llm_observe.instrument' not in sys.modules\n"
        "import openai\n"
        "from llm_observe import init_auto_instrumentation\n"
        "status = init_auto_instrumentation()\n"
        "http = [m for m in ('httpx', 'httpx2') if m in sys.modules]\n"
        "assert http and all(status[m] == 'patched' for m in http), status\n"
        "assert set(status.values()) <= {'patched', 'waiting for import'}, status\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import "
        "InMemorySpanExporter\n"
        "from llm_observe import instrument\n"
        "memory = InMemorySpanExporter(); provider = TracerProvider()\n"
        "provider.add_span_processor(SimpleSpanProcessor(memory))\n"
        "instrument.use_tracer_provider(provider)\n"
        "client = openai.OpenAI(base_url=sys.argv[1], api_key='k', max_retries=0)\n"
        "client.chat.completions.create(model='gpt-4o', "
        "messages=[{'role': 'user', 'content': 'hi'}])\n"
        "spans = [dict(s.attributes) for s in memory.get_finished_spans()\n"
        "         if 'gen_ai.operation.name' in s.attributes]\n"
        "print(json.dumps({'status': init_auto_instrumentation(), 'spans': spans}))\n"
        "from llm_observe import uninstrument_all\n"
        "uninstrument_all()\n"
    )
    with FakeProvider() as fake:
        done = subprocess.run([sys.executable, "-c", code, fake.openai_base_url],
                              capture_output=True, text=True, timeout=120,
                              env={"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:9",
                                   "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    after = json.loads(done.stdout.splitlines()[-1])
    assert after["status"]["openai"] == "patched", after["status"]
    # One call, one span: the SDK's span, not a second one from the HTTP layer under it.
    [span] = after["spans"]
    assert span["gen_ai.request.model"] == "gpt-4o"
    assert span["gen_ai.usage.input_tokens"] == 11


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        _ = llm_observe.no_such_name  # type: ignore[attr-defined]
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
