"""Soak under faults (issue #26): ``serve --workers 2`` in write-ahead mode while workers are
SIGKILLed, the backend goes down, the spool's disk fills up (with the backend down, so
deliveries do not free it) and Redis hangs and dies, all in one run, with exact
accounting of every acknowledged span.

Senders (threads, raw OTLP/gRPC, a new channel every few requests so both workers get
traffic) send requests of ``LLM`` chat spans and one plain span, each span id unique; a
request refused (RESOURCE_EXHAUSTED, UNAVAILABLE, a cut connection) is sent again, same
bytes, until answered OK. Faults rotate every ``--every`` seconds. At the end every fault
is healed, the senders finish their pending retries, and the backend (a loopback OTLP
sink in this process) must receive every acknowledged span. Prints one JSON line:
acknowledged spans (LLM and all), lost (acknowledged, never delivered), delivered twice,
``llm_spans_total`` against the acknowledged LLM spans, and the fault counts.

The spool lives on a tmpfs (needs root to mount; without it the disk-full fault is left
out and said so); Redis needs ``redis-server`` (else left out). Run from the repository
root: ``python -m bench.faults_soak [--seconds 120] [--every 6]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import Tracer
from prometheus_client.parser import text_string_to_metric_families

from tests.cli.test_serve import Served, env, free_port
from tests.collector.exporters.test_write_ahead import CHAT
from tests.fakes.otlp_sink import OtlpSink
from tests.receiver.conftest import T0, llm_span, record_spans

LLM = 20
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MiB = 1024 * 1024


def make_request(i: int) -> tuple[bytes, set[int]]:
    def build(tracer: Tracer) -> None:
        for k in range(LLM):
            llm_span(tracer, "chat gpt-4o", CHAT, start=T0 + i * 100 + k)
        tracer.start_span("db query", start_time=T0, attributes={"pad": "p" * 2000}).end(
            end_time=T0 + 1000)

    spans = record_spans(build)
    return (bytes(encode_spans(spans).SerializeToString()),
            {s.context.span_id for s in spans})


class Senders:
    """Threads sending until stopped, then until every pending request was answered OK."""

    def __init__(self, port: int, n: int) -> None:
        self.port, self.lock, self.next = port, threading.Lock(), 0
        self.acked: set[int] = set()
        self.acked_requests = self.refused = 0
        self.codes: dict[str, int] = {}
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]

    def _take(self) -> int:
        with self.lock:
            self.next += 1
            return self.next

    def _run(self) -> None:
        channel, used = None, 0
        while not self.stop.is_set():
            data, ids = make_request(self._take())
            while True:  # a refused request is sent again, same bytes, until OK
                if channel is None or used >= 5:
                    if channel is not None:
                        channel.close()
                    channel, used = grpc.insecure_channel(f"127.0.0.1:{self.port}"), 0
                used += 1
                try:
                    channel.unary_unary(EXPORT)(data, timeout=10)
                    break
                except grpc.RpcError as exc:
                    with self.lock:
                        self.refused += 1
                        code = exc.code().name  # type: ignore[attr-defined]
                        self.codes[code] = self.codes.get(code, 0) + 1
                    channel.close()
                    channel = None
                    time.sleep(0.2)
            with self.lock:
                self.acked |= ids
                self.acked_requests += 1
        if channel is not None:
            channel.close()


def start_supervisor(environ: dict[str, str], log: Path) -> Served:
    """``serve --workers 2`` with its log in a file (a pipe nobody reads would fill up and
    block the workers' logging mid-soak)."""
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "llm_observe.cli", "serve", "--workers",
                                 "2"], stdout=subprocess.PIPE, stderr=err, text=True,
                                env=environ)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "ready:" in line:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep draining
            return Served(proc, line)
    raise RuntimeError(f"serve exited {proc.wait()}: {log.read_text()[-2000:]}")


def llm_spans_total(port: int) -> float:
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == "llm_spans_total")


class Redis:
    """A throwaway redis-server that can hang (SIGSTOP) and die; None-safe when absent."""

    def __init__(self, work: Path) -> None:
        self.port = free_port()
        self.argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                     "--save", "", "--appendonly", "no", "--dir", str(work)]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> bool:
        try:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL)
        except FileNotFoundError:
            return False
        return True

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def fill(disk: Path) -> None:
    """Take all the room left on the spool's disk (less 64 KiB: a write or two go in)."""
    stat = os.statvfs(disk)
    left = stat.f_bavail * stat.f_frsize - 64 * 1024
    with open(disk / "filler", "wb") as f:
        try:
            while left > 0:  # the spool writes meanwhile: the disk may fill first
                left -= f.write(b"\0" * min(left, MiB))
                f.flush()
        except OSError:
            pass


def kill_a_worker(supervisor: int) -> None:
    children = Path(f"/proc/{supervisor}/task/{supervisor}/children").read_text().split()
    os.kill(int(random.choice(children)), signal.SIGKILL)


class Faults:
    def __init__(self, supervisor: Served, sink: OtlpSink, disk: Path | None,
                 redis: Redis | None) -> None:
        self.supervisor, self.sink, self.disk, self.redis = supervisor, sink, disk, redis
        self.counts: dict[str, int] = {}

    def kinds(self) -> list[str]:
        kinds = ["kill_worker", "backend_down"]
        if self.disk is not None:
            kinds.append("disk_full")
        if self.redis is not None:
            kinds += ["redis_hang", "redis_kill"]
        return kinds

    async def run(self, kind: str, seconds: float) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if kind == "kill_worker":
            await asyncio.to_thread(kill_a_worker, self.supervisor.proc.pid)
        elif kind == "backend_down":
            await self.sink.stop()
            await asyncio.sleep(seconds)
            await self.sink.start()
        elif kind == "disk_full" and self.disk is not None:
            await self.sink.stop()  # else deliveries keep freeing room as fast as it fills
            await asyncio.to_thread(fill, self.disk)
            await asyncio.sleep(seconds)
            await asyncio.to_thread((self.disk / "filler").unlink)
            await self.sink.start()
        elif kind == "redis_hang" and self.redis is not None and self.redis.proc is not None:
            self.redis.proc.send_signal(signal.SIGSTOP)
            await asyncio.sleep(seconds)
            self.redis.proc.send_signal(signal.SIGCONT)
        elif kind == "redis_kill" and self.redis is not None:
            await asyncio.to_thread(self.redis.kill)
            await asyncio.sleep(seconds)
            await asyncio.to_thread(self.redis.start)


async def soak(args: argparse.Namespace, work: Path, disk: Path | None,
               redis: Redis | None) -> dict[str, Any]:
    sink = OtlpSink(keep=True)
    await sink.start()
    otlp, metrics = free_port(), free_port()
    extra = {"LLM_OBSERVE_REDIS_URL": f"redis://127.0.0.1:{redis.port}"} if redis else {}
    environ = env(LLM_OBSERVE_TEMPO_ENDPOINT=sink.endpoint, LLM_OBSERVE_WRITE_AHEAD="true",
                  LLM_OBSERVE_SPOOL_DIR=str((disk or work) / "spool"),
                  LLM_OBSERVE_OTLP_PORT=str(otlp), LLM_OBSERVE_PORT=str(free_port()),
                  LLM_OBSERVE_METRICS_PORT=str(metrics), LLM_OBSERVE_SHUTDOWN_TIMEOUT_S="3",
                  TMPDIR=str(work), **extra)
    log = work / "serve.log"
    served = await asyncio.to_thread(start_supervisor, environ, log)
    faults = Faults(served, sink, disk, redis)
    senders = Senders(otlp, args.senders)
    try:
        for thread in senders.threads:
            thread.start()
        end, kinds, i = time.monotonic() + args.seconds, faults.kinds(), 0
        while time.monotonic() < end:
            await asyncio.sleep(args.every / 2)
            await faults.run(kinds[i % len(kinds)], args.every / 2)
            i += 1
        senders.stop.set()
        for thread in senders.threads:  # pending retries finish once the faults healed
            await asyncio.to_thread(thread.join, 120)
        lost = senders.acked - {int.from_bytes(s.span_id, "big") for s in sink.spans()}
        deadline = time.monotonic() + 90
        while lost and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            lost = senders.acked - {int.from_bytes(s.span_id, "big") for s in sink.spans()}
        await asyncio.sleep(2)  # the workers' scrape-time mirrors catch up
        counted = await asyncio.to_thread(llm_spans_total, metrics)
    finally:
        served.proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(served.proc.wait, 60)
        await sink.stop()
        text = await asyncio.to_thread(log.read_text)
        if args.log:
            await asyncio.to_thread(Path(args.log).write_text, text)
    ids = [int.from_bytes(s.span_id, "big") for s in sink.spans()]
    acked_llm = senders.acked_requests * LLM
    return {"seconds": args.seconds, "acked_requests": senders.acked_requests,
            "acked_spans": len(senders.acked), "acked_llm_spans": acked_llm,
            "lost": len(lost), "delivered": len(ids),
            "delivered_twice": len(ids) - len(set(ids)), "llm_spans_total": counted,
            "counted_minus_acked_llm": counted - acked_llm, "refused_then_retried":
            senders.refused, "refusals": senders.codes, "faults": faults.counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--every", type=float, default=6.0, help="seconds between faults")
    parser.add_argument("--senders", type=int, default=4)
    parser.add_argument("--log", help="write the collector's log to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="llm-observe-soak-") as name:
        work = Path(name)
        disk: Path | None = work / "disk"
        assert disk is not None
        disk.mkdir()
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs",
                                  str(disk)], capture_output=True, check=False).returncode == 0
        notes = [] if mounted else ["no tmpfs (not root): disk_full left out"]
        redis: Redis | None = Redis(work)
        assert redis is not None
        if not redis.start():
            notes.append("no redis-server: Redis faults left out")
            redis = None
        try:
            result = asyncio.run(soak(args, work, disk if mounted else None, redis))
        finally:
            if redis is not None:
                redis.kill()
            if mounted:
                subprocess.run(["umount", "-l", str(disk)], check=False)
        result["notes"] = notes
    print(json.dumps(result), flush=True)
    sys.exit(0 if result["lost"] == 0 else 1)


if __name__ == "__main__":
    main()
