"""The encoder tier's cost: CPU ms per 256-token text (two 128-token windows) and per
window, int8 on one onnxruntime thread; process time (the machine is shared).

Run: python -m bench.scan_guard [--quick] [--compare]   (needs the [guard] extra)
``--compare`` also builds the previous model's arithmetic -- all six MiniLM layers at
full width, the same int8 recipe (base weights: the cost does not depend on the values)
-- and times both alternately in the same run (figures in docs/scanning.md, "Cost").
Detection figures: python scripts/guard_eval.py (docs/scanning.md, "The encoder tier").

``--detection``: the scan requests' path as shipped (``guarded_scanner()``, the combined
verdict, default patterns) against the cheap tiers alone (``RequestScanner`` without the
encoder), alternately on the same validation rows of scripts/guard_data.py: direct
attacks sent as a user message, indirect ones as a tool message, benign texts under
their role (system prompts as one ``text``: unknown role). Recall and false alarms per
group and length band, and the CPU ms per text of each path (process time).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from bench._common import emit
from bench.scan import prose_prompts

if TYPE_CHECKING:
    from llm_observe.guard.model import GuardModel


def main(rounds: int = 40, compare: bool = False, repeats: int = 5) -> None:
    import onnxruntime as ort

    from llm_observe.embedding import cpu, quantize, weights
    from llm_observe.embedding.model import session_options
    from llm_observe.guard.files import load_files
    from llm_observe.guard.model import GRAPH_RECIPE, WINDOW, GuardModel

    start = time.perf_counter()
    files = load_files()
    model = GuardModel(files)
    emit("scan_guard", "load_s", time.perf_counter() - start, "s", note="graph cached after the "
         "first build")
    sessions = {f"{GRAPH_RECIPE}_{files.layers}_layers": model.session}
    if compare:
        six = quantize.build_int8(weights.locate(), levels=cpu.int8_weight_levels(),
                                  kinds=quantize.ALL_KINDS)
        sessions["previous_6_layers"] = ort.InferenceSession(
            six.SerializeToString(), session_options(1), providers=["CPUExecutionProvider"])
    text = " ".join(prose_prompts(8, width=2000))
    ids = model.windows(text)
    two = ids[:2]  # 2 x (126 + 2) = 256 tokens
    assert len(two) == 2 and all(len(w) == WINDOW + 2 for w in two)
    for label, wins in (("256_tokens", two), ("128_tokens", two[:1])):
        # Alternate the recipes, `repeats` medians each, and report the median of those.
        medians: dict[str, list[float]] = {name: [] for name in sessions}
        for _ in range(repeats if compare else 1):
            for name, session in sessions.items():
                model.session = session
                medians[name].append(_median_ms(model, wins, rounds))
        for name, values in medians.items():
            emit("scan_guard", f"p50_ms_{label}", statistics.median(values), "ms",
                 target=10 if label == "256_tokens" else None, threads=1, variant=name)


def _median_ms(model: GuardModel, wins: Sequence[Sequence[int]], rounds: int) -> float:
    model.score_windows(wins)  # warm
    times = []
    for _ in range(rounds):
        t = time.process_time_ns()
        model.score_windows(wins)
        times.append(time.process_time_ns() - t)
    return statistics.median(times) / 1e6


def detection() -> None:
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import guard_data

    from llm_observe.guard import guarded_scanner
    from llm_observe.scan import Scanner, load_patterns
    from llm_observe.scan.requests import RequestScanner

    shipped = guarded_scanner()
    cheap = RequestScanner(Scanner(load_patterns()))
    rows = [r for r in guard_data.rows() if r["split"] == "validation"]
    counts: dict[tuple[str, str, str], list[int]] = {}
    cpu = {"shipped": 0.0, "cheap": 0.0}
    for r in rows:
        text, role, kind = str(r["text"]), str(r["role"]), str(r["kind"])
        group = {"attack": "direct attacks", "indirect_attack": "indirect attacks"}.get(
            kind, f"benign {role}" if kind == "realistic_benign" else "older benign (user)")
        size = "<300" if len(text) < 300 else "300-800" if len(text) <= 800 else ">800"
        for name, scan in (("cheap", cheap), ("shipped", shipped)):
            t = time.process_time()
            got = scan.text(text) if role == "system" else scan.messages([(role, text)])
            cpu[name] += time.process_time() - t
            for b in (size, "all"):
                c = counts.setdefault((name, group, b), [0, 0])
                c[0] += got.injection_attempt
                c[1] += 1
    for (name, group, b), (hit, n) in sorted(counts.items()):
        emit("scan_guard", "flagged_share", hit / n, "ratio", path=name, group=group,
             band=b, flagged=hit, texts=n)
    for name, seconds in cpu.items():
        emit("scan_guard", "cpu_ms_per_text", 1000 * seconds / len(rows), "ms", path=name)


if __name__ == "__main__":
    if "--detection" in sys.argv:
        detection()
    else:
        main(rounds=10 if "--quick" in sys.argv else 40, compare="--compare" in sys.argv)
