"""The encoder tier's cost: CPU ms per 256-token text (two 128-token windows) and per
window, int8 on one onnxruntime thread; process time (the machine is shared).

Run: python -m bench.scan_guard [--quick]   (needs the [guard] extra)
Detection figures: python scripts/guard_eval.py (docs/scanning.md, "The encoder tier").
"""

from __future__ import annotations

import statistics
import sys
import time

from bench._common import emit
from bench.scan import prose_prompts


def main(rounds: int = 40) -> None:
    from llm_observe.guard.files import load_files
    from llm_observe.guard.model import WINDOW, GuardModel

    start = time.perf_counter()
    model = GuardModel(load_files())
    emit("scan_guard", "load_s", time.perf_counter() - start, "s", note="graph cached after the "
         "first build")
    text = " ".join(prose_prompts(8, width=2000))
    ids = model.windows(text)
    two = ids[:2]  # 2 x (126 + 2) = 256 tokens
    assert len(two) == 2 and all(len(w) == WINDOW + 2 for w in two)
    for label, wins in (("256_tokens", two), ("128_tokens", two[:1])):
        times = []
        for _ in range(rounds):
            t = time.process_time_ns()
            model.score_windows(wins)
            times.append(time.process_time_ns() - t)
        emit("scan_guard", f"p50_ms_{label}", statistics.median(times) / 1e6, "ms",
             target=10 if label == "256_tokens" else None, threads=1, variant="int8")


if __name__ == "__main__":
    main(rounds=10 if "--quick" in sys.argv else 40)
