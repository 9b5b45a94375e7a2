"""The package root is the public in-process API (spec 4.15), as the README uses it."""

from __future__ import annotations

import subprocess
import sys

import llm_observe
import llm_observe.instrument as instrument


def test_every_instrumentation_name_is_importable_from_the_package_root() -> None:
    assert set(instrument.__all__) <= set(llm_observe.__all__)
    for name in llm_observe.__all__:
        assert getattr(llm_observe, name) is not None, name
    assert llm_observe.init_auto_instrumentation is instrument.init_auto_instrumentation
    assert llm_observe.observe is instrument.observe


def test_the_readme_quick_start_runs_and_import_stays_light() -> None:
    # A fresh interpreter: `import llm_observe` must not pull in the OTel SDK, and the
    # README's three lines must work as written (targets already imported, here httpx
    # through openai, are patched at once; the others when they are imported).
    code = (
        "import sys\n"
        "import llm_observe\n"
        "assert 'llm_observe.instrument' not in sys.modules\n"
        "import openai\n"
        "from llm_observe import init_auto_instrumentation\n"
        "status = init_auto_instrumentation()\n"
        "assert status['httpx'] == 'patched', status\n"
        "assert set(status.values()) <= {'patched', 'waiting for import'}, status\n"
        "from llm_observe import uninstrument_all\n"
        "uninstrument_all()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env={"OTEL_EXPORTER_OTLP_ENDPOINT": "127.0.0.1:9",
                                            "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        _ = llm_observe.no_such_name  # type: ignore[attr-defined]
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
