"""The full receiver's instructions per span, ours against other commits (issue 24).

``bench.receiver --baseline`` compares spans/s and CPU time, which swing with whatever
else the machine runs. This runs each tree's own ``bench.receiver.run_full`` (the server
with every processor, Prometheus and the forwarder to a loopback sink) under
``valgrind --tool=callgrind`` and counts every thread's instructions from the moment the
server is ready until it is told to stop, while a load process sends ``--requests`` text
requests of 512 spans once, from 2 streams. Start-up and shutdown are not counted.

    python -m bench.receiver_ir [--baseline 51b5287,ba477de] [--requests 8]

Prints one JSON line per tree (instructions per span) and the ratios. Under callgrind the
server runs ~50x slower: 8 requests take a few minutes per tree. ``--bytecodes`` runs
without callgrind and prints the Python bytecodes a span by function instead
(bench/bytecodes.py): where the interpreter's share of those instructions goes.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._common import emit

REPO = Path(__file__).resolve().parents[1]


def child(root: str, sink_port: int, folder: str, bytecodes: bool = False) -> None:
    """Under callgrind: ``root``'s own run_full, its queues replaced by files; a marker
    (``os.getppid``: callgrind dumps there) when ready and when told to stop, the stop
    marker on the event loop's thread first (with ``--separate-threads=yes`` a marker
    dumps only its own thread: the loop's part 2 is then its serving alone). With
    ``bytecodes`` (no callgrind), the markers start and stop bench/bytecodes.py's counter
    instead, whose counts go to the folder's ``bytecodes`` file."""
    import asyncio
    import threading

    from bench import bytecodes as counter
    from bench.baseline import run_full_at

    loops: list[asyncio.AbstractEventLoop] = []

    class Ready:
        def put(self, started: Any) -> None:
            loops.append(asyncio.get_running_loop())
            os.getppid()
            if bytecodes:
                counter.start()
            port = started[0] if isinstance(started, tuple) else started
            Path(folder, "port.tmp").write_text(str(port))
            os.rename(Path(folder, "port.tmp"), Path(folder, "port"))

    class Stop:
        def get(self, *args: Any, **kwargs: Any) -> bool:
            while not Path(folder, "stop").exists():
                time.sleep(0.05)
            marked = threading.Event()

            def mark() -> None:
                os.getppid()
                if bytecodes:
                    Path(folder, "bytecodes").write_text(json.dumps(counter.stop()))
                marked.set()

            loops[0].call_soon_threadsafe(mark)
            marked.wait()
            os.getppid()
            return True

    class Report:
        def put(self, report: Any) -> None:
            Path(folder, "report").write_text(json.dumps(report[:2]))

    run_full_at(root, sink_port, "aio", Ready(), Stop(), Report())


def measure(root: Path, sink_port: int, requests: list[bytes], ctx: Any,
            keep: Path | None = None, cache_sim: bool = False,
            threads: bool = False, bytecodes: bool = False) -> dict[str, float]:
    """Instructions per span of the server of ``root`` serving ``requests`` once; with
    ``keep``, its callgrind profile (ready -> stop) is copied there for callgrind_annotate;
    with ``cache_sim``, callgrind's cache model runs too (I1/D1/LL misses a span: the
    valgrind model of a generic cache hierarchy, not this CPU's counters). With
    ``bytecodes``, no callgrind: the Python bytecodes each function ran, a span."""
    from bench.receiver import run_load

    with tempfile.TemporaryDirectory() as folder:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        valgrind = ["valgrind", "--tool=callgrind", "--dump-before=getppid",
                    *(["--cache-sim=yes"] if cache_sim else []),
                    *(["--separate-threads=yes"] if threads else []),
                    f"--callgrind-out-file={folder}/cg.out"]
        server = subprocess.Popen(
            [*([] if bytecodes else valgrind), sys.executable, "-m", "bench.receiver_ir",
             "--child", str(root), str(sink_port), folder,
             *(["--bytecodes"] if bytecodes else [])],
            env={**env, "PYTHONHASHSEED": "0"}, cwd=REPO, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        while not Path(folder, "port").exists():
            if server.poll() is not None:
                raise SystemExit(f"receiver_ir: the server of {root} failed")
            time.sleep(0.2)
        results = ctx.Queue()
        load = ctx.Process(target=run_load, args=(int(Path(folder, "port").read_text()),
                                                  requests, 0, 0, 2, True, results))
        load.start()
        results.get(timeout=7200)
        load.join()
        Path(folder, "stop").touch()
        server.wait(timeout=7200)
        handled = json.loads(Path(folder, "report").read_text())[0]
        assert handled == len(requests) * 512
        if bytecodes:
            counts = json.loads(Path(folder, "bytecodes").read_text())
            return {name: count / handled for name, count in counts.items()}
        # with --separate-threads a marker dumps only its own thread: part 2 of thread 1
        # (the event loop's, which ran the stop marker) is the loop's serving alone
        part = "cg.out.2-01" if threads else "cg.out.2"
        text = Path(folder, part).read_text(errors="replace")  # ready -> stop
        if keep is not None:
            keep.write_text(text)
        return {name: count / handled for name, count in _events(text).items()}


def _events(text: str) -> dict[str, int]:
    """A callgrind profile's totals by event (Ir, and the cache model's misses)."""
    events = re.search(r"^events: (.+)$", text, re.M)
    m = re.search(r"^(?:totals|summary): ([\d ]+)", text, re.M)
    assert events is not None and m is not None
    return {name: int(count)
            for name, count in zip(events.group(1).split(), m.group(1).split(), strict=False)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--baseline", default="51b5287")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--keep", type=Path, help="a folder: keep each tree's profile there "
                        "(<tree>.callgrind, for callgrind_annotate --inclusive=yes)")
    parser.add_argument("--cache-sim", action="store_true", help="callgrind's cache model "
                        "too: I1/D1/LL misses a span beside the instructions")
    parser.add_argument("--threads", action="store_true", help="callgrind's "
                        "--separate-threads: the event loop thread's instructions alone")
    parser.add_argument("--bytecodes", action="store_true", help="no callgrind: the "
                        "Python bytecodes a span each function runs, ours against the "
                        "first baseline (bench/bytecodes.py)")
    parser.add_argument("--no-text", action="store_true", help="requests without texts "
                        "(the floor comparison's workload) instead of ~200-character ones")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2], args.bytecodes)
        return
    from bench.baseline import worktree
    from bench.receiver import make_requests
    from bench.receiver_sink import Sink

    refs = [r for r in args.baseline.split(",") if r]
    trees = {"current": REPO, **{ref: worktree(ref) for ref in refs}}
    ctx = mp.get_context("spawn")
    sink = Sink(ctx)
    try:
        bases = make_requests(16, text=not args.no_text)
        requests = [bases[i % len(bases)] for i in range(args.requests)]
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
        per = {name: measure(root, sink.port, requests, ctx,
                             args.keep / f"{name}.callgrind" if args.keep else None,
                             args.cache_sim, args.threads, args.bytecodes)
               for name, root in trees.items()}
    finally:
        sink.close()
    if args.bytecodes:
        from bench.bytecodes import table

        ref = refs[0] if refs else "current"
        print("\n".join(table(per["current"], per[ref], str(REPO), str(trees[ref]))))
        return
    for name, events in per.items():
        value = events["Ir"]
        extra = {f"ratio_vs_{ref}": round(per[ref]["Ir"] / value, 3) for ref in refs}
        what = "loop_thread" if args.threads else "full" if args.no_text else "full_text"
        emit("receiver_ir", f"{name}_{what}_instructions_per_span", value,
             "instructions", requests=args.requests, **(extra if name == "current" else {}))
        for event, count in events.items():
            if event != "Ir":  # the cache model's misses (--cache-sim)
                emit("receiver_ir", f"{name}_{what}_{event}_per_span", count, "events",
                     requests=args.requests, **{f"ratio_vs_{ref}": round(
                         per[ref][event] / count, 3) for ref in refs if count})


if __name__ == "__main__":
    main()
