"""collector/heap.py: what ``serve`` sets once before the doors open.

Process-wide settings, so each case runs in a fresh interpreter: the suite's own heap and
GC settings stay as CPython's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A collector's pipeline fed 512-span text requests (bench.receiver's) as the OTLP door
# feeds it, with the young collections counted from the first request on.
SCRIPT = r"""
import asyncio, gc, json, sys
from prometheus_client import CollectorRegistry
from bench.receiver import make_requests
from llm_observe.collector.assembly import build_collector
from llm_observe.collector.heap import settle_for_serving
from llm_observe.collector.settings import Settings
from llm_observe.otlp.walk import decode_request, walk
from llm_observe.pipeline import Batch

async def main():
    collector = build_collector(Settings(), CollectorRegistry())
    await collector.pipeline.start()
    if sys.argv[1] == "serving":
        settle_for_serving()
    requests = make_requests(4, text=True)
    counts = [0, 0, 0]
    def count(phase, info):
        if phase == "stop":
            counts[info["generation"]] += 1
    gc.callbacks.append(count)
    for request in requests:
        walked = walk(decode_request(request))
        await collector.pipeline.submit(Batch(walked.llm, walked))
    gc.callbacks.remove(count)
    print(json.dumps({"collections": counts, "frozen": gc.get_freeze_count(),
                      "switch": sys.getswitchinterval(), "threshold": gc.get_threshold()[0]}))

asyncio.run(main())
"""


def run(mode: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300, check=True)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_a_requests_objects_die_before_any_collection_when_serving() -> None:
    default, serving = run("default"), run("serving")
    # CPython's 700 runs young collections all through each request (the live batch
    # walked again and again); sized for a request in flight, none come
    assert sum(default["collections"]) >= 8  # type: ignore[arg-type]
    assert serving["collections"] == [0, 0, 0]
    assert serving["frozen"] > 10_000  # type: ignore[operator]
    assert serving["switch"] == 0.001 and default["switch"] == 0.005
