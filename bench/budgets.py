"""Instruction budgets: the CI guard on the span path's cost that machine noise cannot fool.

Seconds vary with whatever else the machine runs; instructions counted by
``valgrind --tool=callgrind`` do not (the same binary, inputs and hash seed give the same
count). One run under callgrind sets every workload up, warms it with one unit, then runs
it between two ``os.getppid()`` markers — callgrind dumps its counters at each
(``--dump-before=getppid``), so each workload's instructions are read apart from the
imports and the set-up. Per unit (a span, a render, a call) they are compared with
``bench/budgets.json``; a workload more than 5% over its budget fails the check.

    python -m bench.budgets            # measure and check (CI: .ci/run)
    python -m bench.budgets --update   # write the measured figures as the new budgets

Raising a budget is a commit of its own that says why. Budgets hold for the interpreter
they were measured on (recorded beside them): on another Python the figures are printed
and not judged. Workloads (units): the processor chain (tokens, cost, scan, sampling) plus
the Prometheus record of spans with ~200-char texts and without (per span), decode + walk
+ map of a fixed OTLP request (per span), the exposition of a registry holding 120 label
sets (per render: from scratch, and again with nothing changed), one patched OpenAI call
through an in-memory transport, minus the same call unpatched (per call). The cyclic
garbage collector is off while a section runs. The text workload's budget depends on
which word-model scorer runs (scan/native): ``chain_text`` is the compiled one's,
``chain_text_pure`` the pure-Python one's (``LLM_OBSERVE_PURE=1``, no C compiler); each
run judges and ``--update`` rewrites the one it measured.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

BUDGETS = Path(__file__).with_name("budgets.json")
TOLERANCE = 0.05
# Each workload: the units (spans, renders, calls) of its measured section, run in this order.
WORKLOADS: dict[str, int] = {
    "chain_text": 200,
    "chain_plain": 200,
    "walk_map": 512,  # one request of bench.receiver.BATCH spans
    "exposition": 1,
    "exposition_kept": 1,
    "openai_call_unpatched": 50,
    "openai_call_patched": 50,
}
# Figures judged against budgets: (unit, the section's instructions per unit or a difference).
FIGURES: dict[str, tuple[str, Callable[[dict[str, float]], float]]] = {
    "chain_text": ("span", lambda per: per["chain_text"]),
    "chain_plain": ("span", lambda per: per["chain_plain"]),
    "walk_map": ("span", lambda per: per["walk_map"]),
    "exposition": ("render", lambda per: per["exposition"]),
    "exposition_kept": ("render", lambda per: per["exposition_kept"]),
    "openai_call_added": ("call", lambda per: per["openai_call_patched"]
                          - per["openai_call_unpatched"]),
}


def _mark() -> None:
    os.getppid()  # callgrind dumps its counters here (--dump-before=getppid)


# ---------------------------------------------------------------- workloads (child side)


def _chain(text: bool) -> tuple[Callable[[], None], Callable[[], None]]:
    from prometheus_client import CollectorRegistry

    from bench.processors import make_spans
    from llm_observe.collector.exporters.prometheus import LlmMetrics
    from llm_observe.pipeline import ProcessorChain
    from llm_observe.pricing import load_price_table
    from llm_observe.processors.cost import CostProcessor
    from llm_observe.processors.sampling import SamplingProcessor
    from llm_observe.processors.scan import ScanProcessor
    from llm_observe.processors.tokens import TokensProcessor
    from llm_observe.scan import Scanner, load_patterns

    n = WORKLOADS["chain_text"]
    metrics = LlmMetrics(CollectorRegistry())
    # exemplars in their steady state (the warm-up opened a window that lasts the run):
    # their time window would make the count depend on how slow callgrind ran; the pick
    # once a window is measured apart (python -m bench.exemplars)
    assert metrics.exemplars is not None
    metrics.exemplars.window_s = 1e9
    chain = ProcessorChain([TokensProcessor(), CostProcessor(load_price_table()),
                            ScanProcessor(Scanner(load_patterns())), SamplingProcessor()])
    batches = [make_spans(n, with_counts=True) for _ in range(2)]
    if not text:
        for batch in batches:
            for span in batch:
                span.prompt_text = span.completion_text = None

    def run(batch: list[Any]) -> None:
        chain.run(batch)
        metrics.record(batch)

    return (lambda: run(batches[0])), (lambda: run(batches[1]))


def _walk_map() -> tuple[Callable[[], None], Callable[[], None]]:
    from bench.receiver import BATCH, make_requests
    from llm_observe.otlp.walk import decode_request, walk

    assert WORKLOADS["walk_map"] == BATCH
    requests = make_requests(2, text=True)

    def run(data: list[bytes]) -> None:
        for request in data:
            walk(decode_request(request))

    return (lambda: run(requests[:1])), (lambda: run(requests[1:]))


def _exposition(kept: bool = False) -> tuple[Callable[[], None], Callable[[], None]]:
    """``kept``: the same Exposition renders again, nothing changed (every label set's kept
    lines); else a fresh one per render (every label set rendered from scratch)."""
    from prometheus_client import CollectorRegistry

    from bench.processors import make_spans
    from llm_observe.collector.exporters.exposition import Exposition
    from llm_observe.collector.exporters.prometheus import LlmMetrics

    registry = CollectorRegistry()
    metrics = LlmMetrics(registry)
    spans = make_spans(120, with_counts=True)
    for i, span in enumerate(spans):  # 120 label sets: models x services x finish reasons
        span.cost_usd_micro = 1000 + i
        span.finish_reason = ("stop", "length", "tool_calls")[i % 3]
        span.service_name = f"service-{i % 8}"
    metrics.record(spans)
    current = [Exposition(registry)]
    name = "exposition_kept" if kept else "exposition"

    def run(times: int) -> None:
        for _ in range(times):
            if not kept:  # a fresh exposition keeps nothing
                registry.unregister(current[0])
                current[0] = Exposition(registry)
            current[0].render()

    return (lambda: run(1)), (lambda: run(WORKLOADS[name]))


def _openai(patched: bool) -> tuple[Callable[[], None], Callable[[], None]]:
    import openai
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

    from llm_observe import instrument

    transport_mod: Any = __import__(
        "httpx2" if openai.DefaultHttpxClient.__mro__[1].__module__.startswith("httpx2")
        else "httpx")
    answer = json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1750000000,
        "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "You said: ping pong"}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15}}).encode()

    def handler(request: Any) -> Any:
        return transport_mod.Response(200, content=answer,
                                      headers={"content-type": "application/json"})

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(Drop()))  # synchronous: no thread
    instrument.use_tracer_provider(provider)
    if patched:
        instrument.init_auto_instrumentation()
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0,
                           http_client=openai.DefaultHttpxClient(
                               transport=transport_mod.MockTransport(handler)))
    messages = [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": "ping pong"}]

    def run(times: int) -> None:
        for _ in range(times):
            client.chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[call-overload]

    name = "openai_call_patched" if patched else "openai_call_unpatched"
    return (lambda: run(1)), (lambda: run(WORKLOADS[name]))


SETUPS: dict[str, Callable[[], tuple[Callable[[], None], Callable[[], None]]]] = {
    "chain_text": lambda: _chain(True),
    "chain_plain": lambda: _chain(False),
    "walk_map": _walk_map,
    "exposition": _exposition,
    "exposition_kept": lambda: _exposition(kept=True),
    "openai_call_unpatched": lambda: _openai(False),
    "openai_call_patched": lambda: _openai(True),
}


def child() -> None:
    """Set up, warm and run each workload; a marker before and after each measured part."""
    for name in WORKLOADS:
        warm, measured = SETUPS[name]()
        warm()
        # The cyclic collector runs when allocation counts say so, and a full collection
        # walks the whole heap (litellm, openai, ...): landing in one section or the next,
        # it would swing a figure by more than the tolerance. Measured without it.
        gc.collect()
        gc.disable()
        _mark()
        measured()
        _mark()
        gc.enable()


# ---------------------------------------------------------------- the check (parent side)


def measure() -> dict[str, float]:
    """Instructions per unit of each section, from one callgrind run of ``child``."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise SystemExit("budgets: valgrind is not installed (apt-get install valgrind)")
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONHASHSEED": "0", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        done = subprocess.run(
            [valgrind, "--tool=callgrind", "--dump-before=getppid",
             f"--callgrind-out-file={out}/cg.out", sys.executable, "-m", "bench.budgets",
             "--child"], env=env, capture_output=True, text=True, cwd=Path(__file__).parents[1])
        if done.returncode != 0:
            raise SystemExit("budgets: the workloads failed under callgrind:\n"
                             + done.stderr[-3000:])
        totals = {}
        for path in Path(out).glob("cg.out.*"):
            m = re.search(r"^totals: (\d+)", path.read_text(errors="replace"), re.M)
            totals[int(path.suffix[1:])] = int(m.group(1)) if m else 0
    # dump k (1-based) holds the counts since dump k-1; the measured parts are the dumps
    # that end at each workload's second marker: 2, 4, 6, ... after set-up dumps 1, 3, 5.
    per: dict[str, float] = {}
    for i, (name, units) in enumerate(WORKLOADS.items()):
        per[name] = totals[2 * i + 2] / units
    return per


def _interpreter() -> str:
    return f"{platform.python_implementation()} {platform.python_version()} ({sys.executable})"


def _scorer_suffix() -> str:
    """"" when the word model runs compiled (scan/native), else "_pure"."""
    from llm_observe.scan import native

    return "" if native.COMPILED else "_pure"


def check(update: bool) -> int:
    suffix = _scorer_suffix()  # before the run: the child imports the same scorer
    per = measure()
    figures = {name + (suffix if name == "chain_text" else ""): fn(per)
               for name, (_, fn) in FIGURES.items()}
    saved = json.loads(BUDGETS.read_text()) if BUDGETS.exists() else {}
    budgets: dict[str, Any] = saved.get("budgets", {})
    same_python = saved.get("python", "").split(" (")[0] == _interpreter().split(" (")[0]
    failed = []
    for name, value in figures.items():
        budget = budgets.get(name, {}).get("instructions")
        unit = FIGURES[name.removesuffix("_pure")][0]
        verdict = "no budget"
        if budget:
            ratio = value / budget
            verdict = f"{ratio:.3f}x budget {budget:,.0f}"
            if same_python and ratio > 1 + TOLERANCE:
                failed.append(name)
                verdict += f"  OVER by more than {TOLERANCE:.0%}"
        print(f"budgets: {name:<20} {value:>14,.0f} instructions/{unit}  {verdict}")
    if update:
        BUDGETS.write_text(json.dumps({
            "python": _interpreter(), "tolerance": TOLERANCE,
            "budgets": {**budgets, **{name: {"instructions": round(value),
                                             "unit": FIGURES[name.removesuffix("_pure")][0]}
                                      for name, value in figures.items()}}}, indent=2) + "\n")
        print(f"budgets: wrote {BUDGETS.name}; commit it with a message that says why")
        return 0
    if not same_python:
        print(f"budgets: measured on {saved.get('python')}, this is {_interpreter()}: "
              "figures printed, not judged")
        return 0
    if failed:
        print(f"budgets: FAILED: {', '.join(failed)} over budget (bench/budgets.json)")
        return 1
    print("budgets: OK: every workload within its budget")
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="write measured budgets")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    sys.exit(check(args.update))


if __name__ == "__main__":
    main()
