"""Per-thread CPU of a server process under load, read from /proc (``bench.receiver --threads``).

Callgrind counts instructions; the wall clock also pays for waiting: for a core (the
machine is shared), for the GIL (a thread that wants it sleeps on a futex: a voluntary
context switch), for work (the loop idle in epoll). This samples every thread of a
process, ours or a baseline's, without touching its code: ``/proc/PID/task/TID/schedstat``
(ns on a CPU, ns runnable but waiting for one, slices), ``.../stat`` (the part of that CPU
spent in the kernel: system calls, page faults, which callgrind does not count) and
``.../status`` (voluntary and involuntary context switches), once when the measured window
opens and once when it closes. Python threads are not named at the OS level: the main
thread (tid = pid) runs the event loop; the other ``python`` threads are ranked by CPU
(the busiest is the CPU worker, ``pipeline/cpu.py`` in ours, the pools' busiest in 1.8.2).
gRPC's C-core threads carry their own names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

TICKS = os.sysconf("SC_CLK_TCK")  # stat's utime/stime unit


@dataclass
class Sample:
    name: str
    cpu_ns: int
    wait_ns: int
    voluntary: int
    involuntary: int
    system_ticks: int = 0  # clock ticks in the kernel (stat field 15, stime)


def snapshot(pid: int) -> dict[int, Sample]:
    """Every live thread of ``pid`` now (threads that end in between are lost)."""
    out = {}
    base = f"/proc/{pid}/task"
    for tid_s in os.listdir(base):
        try:
            with open(f"{base}/{tid_s}/schedstat") as f:
                cpu, wait, _ = (int(x) for x in f.read().split())
            with open(f"{base}/{tid_s}/comm") as f:
                name = f.read().strip()
            with open(f"{base}/{tid_s}/stat") as f:  # "pid (comm) state ..."; comm may hold spaces
                stime = int(f.read().rsplit(")", 1)[1].split()[12])
            vol = invol = 0
            with open(f"{base}/{tid_s}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches"):
                        vol = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches"):
                        invol = int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
        out[int(tid_s)] = Sample(name, cpu, wait, vol, invol, stime)
    return out


def per_thread(pid: int, before: dict[int, Sample], after: dict[int, Sample],
               spans: int, requests: int, wall_s: float) -> dict[str, dict[str, Any]]:
    """Rows by role: CPU µs a span, runnable-but-waiting µs a span, voluntary and
    involuntary switches a request, share of the window's wall time on a CPU."""
    rows: list[tuple[str, Sample]] = []
    for tid, end in after.items():
        start = before.get(tid, Sample(end.name, 0, 0, 0, 0))
        rows.append((("loop (main thread)" if tid == pid else end.name),
                     Sample(end.name, end.cpu_ns - start.cpu_ns, end.wait_ns - start.wait_ns,
                            end.voluntary - start.voluntary,
                            end.involuntary - start.involuntary,
                            end.system_ticks - start.system_ticks)))
    others = sorted((r for r in rows if r[0] == "python"), key=lambda r: -r[1].cpu_ns)
    named = [r for r in rows if r[0] != "python"]
    if others:
        named.append(("python: busiest other (CPU worker)", others[0][1]))
    named.extend(("python: other threads", s) for _, s in others[1:])
    table: dict[str, dict[str, Any]] = {}
    for role, s in named:
        row = table.setdefault(role, {"threads": 0, "cpu": 0, "wait": 0, "vol": 0, "invol": 0,
                                      "sys": 0})
        row["threads"] += 1
        row["cpu"] += s.cpu_ns
        row["wait"] += s.wait_ns
        row["vol"] += s.voluntary
        row["invol"] += s.involuntary
        row["sys"] += s.system_ticks
    out = {}
    for role, r in table.items():
        if not r["cpu"] and not r["vol"]:
            continue
        out[role] = {"threads": r["threads"],
                     "cpu_us_per_span": round(r["cpu"] / 1e3 / max(spans, 1), 2),
                     "system_us_per_span": round(r["sys"] * 1e6 / TICKS / max(spans, 1), 2),
                     "runq_wait_us_per_span": round(r["wait"] / 1e3 / max(spans, 1), 2),
                     "busy_share": round(r["cpu"] / 1e9 / wall_s, 3),
                     "voluntary_per_request": round(r["vol"] / max(requests, 1), 1),
                     "involuntary_per_request": round(r["invol"] / max(requests, 1), 1)}
    return out


class Window:
    """Snapshots of ``pid``'s threads ``warmup`` s from now and ``seconds`` s after that
    (in a timer thread, so the caller can block on the load meanwhile)."""

    def __init__(self, pid: int, warmup: float, seconds: float) -> None:
        import threading

        self.pid, self.seconds = pid, seconds
        self.before: dict[int, Sample] = {}
        self.after: dict[int, Sample] = {}
        self._first = threading.Timer(warmup, self._snap, (self.before,))
        self._second = threading.Timer(warmup + seconds, self._snap, (self.after,))
        self._first.start()
        self._second.start()

    def _snap(self, into: dict[int, Sample]) -> None:
        into.update(snapshot(self.pid))

    def table(self, spans: int, requests: int) -> dict[str, dict[str, Any]]:
        self._first.join()
        self._second.join()
        return per_thread(self.pid, self.before, self.after, spans, requests, self.seconds)


class GcTimes:
    """The cyclic collector's collections and thread CPU time, by generation, from now to
    :meth:`stop` (``gc.callbacks``: two calls a collection, nothing between)."""

    def __init__(self) -> None:
        import gc
        import time

        self._clock = time.thread_time
        self._t0 = 0.0
        self.counts = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._gc = gc
        gc.callbacks.append(self._callback)

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0 = self._clock()
            return
        generation = info["generation"]
        self.counts[generation] += 1
        self.seconds[generation] += self._clock() - self._t0

    def stop(self) -> None:
        if self._callback in self._gc.callbacks:
            self._gc.callbacks.remove(self._callback)

    def figures(self, cpu_s: float) -> dict[str, float]:
        """``gc_collections_<gen>``, ``gc_seconds`` and ``gc_share`` of ``cpu_s``."""
        out: dict[str, float] = {f"gc_collections_{g}": n for g, n in enumerate(self.counts)}
        out["gc_seconds"] = round(sum(self.seconds), 4)
        out["gc_share"] = round(sum(self.seconds) / cpu_s, 4) if cpu_s else 0.0
        return out
