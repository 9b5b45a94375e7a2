"""Which Python functions run the bytecode of a span (``bench.receiver_ir --bytecodes``).

Callgrind counts machine instructions but sees Python only as the interpreter's loop,
whose instructions cost more time each than a C routine's (its branches and the cache
misses of its large body). This counts, per Python function, the bytecode instructions it
executes: a tracer with ``f_trace_opcodes`` on the threads that serve (the event loop's,
and threads started after :func:`start`), from :func:`start` to :func:`stop`. Counts
repeat to a few in 3,000 a span (the harness's own polling thread is counted too); the
run is ~50× slower, which does not change them. A count says where the Python is, not
what it costs: a specialised attribute load takes ~1-2 ns, a call far more
(bench/README.md, "Stop 29").
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from types import FrameType
from typing import Any

_counts: Counter[tuple[str, str]] = Counter()


def _tracer(frame: FrameType, event: str, arg: Any) -> Any:
    if event == "call":
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
    elif event == "opcode":
        code = frame.f_code
        _counts[(code.co_filename, code.co_qualname)] += 1
    return _tracer


def start() -> None:
    """Count on this thread and on every thread started from now on."""
    _counts.clear()
    threading.settrace(_tracer)
    sys.settrace(_tracer)


def stop() -> dict[str, int]:
    """Stop counting; the counts by ``file:function``."""
    sys.settrace(None)
    threading.settrace(None)  # type: ignore[arg-type]
    return {f"{file}:{name}": n for (file, name), n in _counts.items()}


def table(ours: dict[str, float], base: dict[str, float], root: str, base_root: str,
          top: int = 60) -> list[str]:
    """Lines: the functions whose count a span (``ours``, ``base``: already per span)
    differs most between two trees (paths shown relative to their tree), then the totals."""
    def short(counts: dict[str, float], prefix: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for key, n in counts.items():
            out[key.replace(prefix + "/", "").replace(sys.prefix + "/", "")] += n
        return out

    a, b = short(ours, root), short(base, base_root)
    rows = sorted(set(a) | set(b), key=lambda k: -abs(a[k] - b[k]))[:top]
    lines = [f"{'ours':>8} {'base':>8}  bytecodes a span, by function (largest differences)"]
    lines += [f"{a[k]:8.1f} {b[k]:8.1f}  {k}" for k in rows]
    lines.append(f"{sum(a.values()):8.1f} {sum(b.values()):8.1f}  total")
    return lines
