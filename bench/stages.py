"""Where a text span's cost goes: µs and instructions per span for each stage (issue 24).

The full receiver's path in process, stage by stage, over the same requests as
``bench.receiver`` (512 spans, ~200-character prompt and completion): decode, walk + map,
each processor of ``build_collector``'s chain, the forwarder's re-encode (redaction
included), the metrics record (spec + GenAI); then the scan stage's tiers on the same
texts (fold, phrase automaton, digit gate, word model on the prompts). Each stage runs
over every batch in turn, so it can be timed (CPU time, median of ``--repeats``) and, under
``--instructions``, counted by callgrind between two markers (as bench/budgets.py does).
What the doors, the event loop and gRPC add is not here: ``bench.receiver`` measures the
whole (server CPU per span).

    python -m bench.stages [--requests 8] [--repeats 5] [--instructions]
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench._common import callgrind_sections, emit, run_sections, sections_args


def stages(n_requests: int) -> tuple[int, list[tuple[str, Callable[[], Any]]]]:
    """(spans, [(stage, run it over every batch)]) in the pipeline's order."""
    from prometheus_client import CollectorRegistry

    from bench.receiver import make_requests
    from llm_observe.collector.assembly import build_collector
    from llm_observe.collector.settings import Settings
    from llm_observe.otlp.encode import Encoder
    from llm_observe.otlp.walk import decode_request, walk
    from llm_observe.pipeline import Batch
    from llm_observe.scan.normalize import fold, same_offsets

    collector = build_collector(Settings(), CollectorRegistry())
    chain, scanner = collector.pipeline.chain, collector.scanner
    chain.warm()
    requests = make_requests(n_requests, text=True)
    state: dict[str, Any] = {}
    encoder = Encoder()

    def decode() -> None:
        state["decoded"] = [decode_request(r) for r in requests]

    def walk_map() -> None:
        state["walked"] = [walk(d) for d in state["decoded"]]
        state["batches"] = [Batch(w.llm, w) for w in state["walked"]]

    def processor(p: Any) -> Callable[[], None]:
        return lambda: [chain.run_one(p, b) for b in state["batches"]]

    def texts() -> list[str]:
        return [t for b in state["batches"] for s in b for t in (s.prompt_text,
                                                                 s.completion_text) if t]

    def folded() -> None:
        state["folded"] = [same_offsets(t) or fold(t).text for t in texts()]

    automaton = scanner._automaton
    model = scanner.model
    out: list[tuple[str, Callable[[], Any]]] = [("decode", decode), ("walk + map", walk_map)]
    out += [(p.name, processor(p)) for p in chain.processors]
    out += [
        ("forwarder re-encode", lambda: [encoder.items(b, w, in_place=True) for b, w in
                                         zip(state["batches"], state["walked"], strict=True)]),
        ("metrics record", lambda: [collector.metrics.record(b) for b in state["batches"]]),
        ("scan: fold", folded),
        ("scan: phrase automaton", lambda: [automaton.find(t) for t in state["folded"]]),
        ("scan: digit gate", lambda: [scanner._digit_gate_bits(t) for t in texts()]),
        ("scan: word model (prompts)", lambda: [model.detect(t) for t in state["folded"][::2]]),
    ]
    return n_requests * 512, out


def child(n_requests: int) -> None:
    run_sections(stages(n_requests)[1])


def instructions(n_requests: int) -> dict[str, float]:
    return callgrind_sections("bench.stages", ["--requests", str(n_requests)],
                              n_requests * 512)


def main() -> None:
    args = sections_args(child)
    if args is None:
        return
    spans, work = stages(args.requests)
    times: dict[str, list[float]] = {name: [] for name, _ in work}
    for _ in range(args.repeats):
        for name, run in work:
            gc.collect()
            gc.disable()
            t0 = time.process_time()
            run()
            times[name].append(time.process_time() - t0)
            gc.enable()
    counted = instructions(max(1, args.requests // 4)) if args.instructions else {}
    for name, values in times.items():
        extra = {"instructions_per_span": round(counted[name])} if name in counted else {}
        emit("stages", name, statistics.median(values) / spans * 1e6, "us/span", spans=spans,
             **extra)


if __name__ == "__main__":
    main()
