"""What trace exemplars cost a metric update (issue 28: target <= 1.1x without them).

``LlmMetrics.record`` per pipeline batch of 512 spans (the exporter's slices are at most
4,096), exemplars on against off, CPU time alternated in one run (``paired_ratio``):

- ``bench_spans``: ``bench.processors.make_spans`` (its models and services: few label
  groups per batch, the common case);
- ``one_group_per_8_spans``: 64 label groups per batch, 8 spans each: exemplars are set once
  per group and batch, so few spans per group is their worst case;
- ``..._every_batch``: the window (``exemplars.WINDOW_S``) set to 0, so every batch picks
  all its exemplars: the cost per batch when batches arrive a window apart or more;
- ``worker_store``: as ``serve --workers`` runs it: multiprocess (file-backed) values on
  both sides, exemplars kept in ``WorkerExemplars`` (a child process of this bench, with
  ``PROMETHEUS_MULTIPROC_DIR`` set before prometheus_client is imported), bench spans.

Seconds on a shared 2-core machine swing by ±10% from run to run, more than the effect, so
the same workloads are also counted in instructions (``valgrind --tool=callgrind``, when
installed; garbage collector on, as in production): ``instructions_with_vs_without_*``,
for the window open (steady state) and with every batch picking (``..._every_batch``).

Run: ``python -m bench.exemplars [--quick]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from prometheus_client import CollectorRegistry

from bench._common import emit, paired_ratio, pin_one_core, quick
from bench.processors import make_spans
from llm_observe.collector.exporters.exemplars import WINDOW_S
from llm_observe.collector.exporters.prometheus import LlmMetrics
from llm_observe.span import LlmSpan


def _batches(spans: list[LlmSpan]) -> list[list[LlmSpan]]:
    return [spans[i:i + 512] for i in range(0, len(spans), 512)]


def _ratio(name: str, spans: list[LlmSpan], store: bool = False,
           window_s: float = WINDOW_S) -> None:
    """``store``: this process writes multiprocess values (checked: the sink is the store)."""
    parts = _batches(spans)
    without = LlmMetrics(CollectorRegistry(), exemplars=False)
    with_ = LlmMetrics(CollectorRegistry())  # in a worker: the WorkerExemplars sink
    assert with_.exemplars is not None
    assert (with_.exemplars.sink.__name__ == "keep") == store
    with_.exemplars.window_s = window_s
    for m in (without, with_):  # label sets created before timing
        m.record(parts[0])
    t_without, t_with, ratio = paired_ratio(
        lambda: [without.record(p) for p in parts], lambda: [with_.record(p) for p in parts])
    emit("exemplars", f"record_with_vs_without_{name}", 1 / ratio, "x", target="<= 1.1",
         window_s=window_s,
         us_per_span_without=round(t_without / len(spans) * 1e6, 3),
         us_per_span_with=round(t_with / len(spans) * 1e6, 3),
         note="median of paired CPU-time ratios, batches of 512")


def _counted(mode: str, shape: str) -> None:
    """The child under callgrind: 3 x 20 batches of 512 between two getppid() markers."""
    spans = make_spans(512 * 20, with_counts=True)
    for i, s in enumerate(spans):
        s.cost_usd_micro = 1000 + i % 97
        if shape == "one_group_per_8_spans":
            s.model, s.service_name = f"m{i % 16}", f"s{(i // 16) % 4}"
    parts = _batches(spans)
    m = LlmMetrics(CollectorRegistry(), exemplars=mode != "off")
    if m.exemplars is not None:
        m.exemplars.window_s = 0.0 if mode == "every_batch" else 1e9
    m.record(parts[0])
    os.getppid()
    for _ in range(3):
        for p in parts:
            m.record(p)
    os.getppid()


def _instructions() -> None:
    import re
    import shutil
    if shutil.which("valgrind") is None:
        print("bench.exemplars: no valgrind, instruction counts skipped", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory(prefix="bench-exemplars-cg-") as tmp:
        def count(mode: str, shape: str) -> int:
            out = os.path.join(tmp, f"cg.{mode}.{shape}")
            subprocess.run(["valgrind", "--tool=callgrind", "--dump-before=getppid",
                            f"--callgrind-out-file={out}", sys.executable, "-m",
                            "bench.exemplars", "--counted", mode, shape],
                           check=True, capture_output=True)
            with open(f"{out}.2") as f:  # the part between the two markers
                return int(re.search(r"^summary: (\d+)", f.read(), re.M).group(1))  # type: ignore[union-attr]
        for shape in ("bench_spans", "one_group_per_8_spans"):
            off = count("off", shape)
            for mode in ("window", "every_batch"):
                suffix = "" if mode == "window" else "_every_batch"
                emit("exemplars", f"instructions_with_vs_without_{shape}{suffix}",
                     count(mode, shape) / off, "x", target="<= 1.1",
                     instructions_per_span_without=round(off / (3 * 20 * 512)))


def main() -> None:
    if "--counted" in sys.argv:
        i = sys.argv.index("--counted")
        _counted(sys.argv[i + 1], sys.argv[i + 2])
        return
    pin_one_core()
    n = 10_240 if quick() else 51_200
    spans = make_spans(n, with_counts=True)
    for i, s in enumerate(spans):
        s.cost_usd_micro = 1000 + i % 97
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # the child: multiprocess values
        _ratio("worker_store", spans, store=True)
        return
    _ratio("bench_spans", spans)
    many = make_spans(n, with_counts=True)
    for i, s in enumerate(many):  # 64 groups in every batch of 512
        s.model, s.service_name, s.cost_usd_micro = f"m{i % 16}", f"s{(i // 16) % 4}", 500 + i
    _ratio("one_group_per_8_spans", many)
    # every batch picks all its exemplars: what a batch costs when batches are a window apart
    _ratio("bench_spans_every_batch", spans, window_s=0.0)
    _ratio("one_group_per_8_spans_every_batch", many, window_s=0.0)
    with tempfile.TemporaryDirectory(prefix="bench-exemplars-") as path:
        subprocess.run([sys.executable, "-m", "bench.exemplars", *sys.argv[1:]], check=True,
                       env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": path})
    _instructions()


if __name__ == "__main__":
    main()
