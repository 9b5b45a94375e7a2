"""Write-ahead with the spool's disk full (issue #26, 2 and 3), on a real ``serve``
process whose spool is a 4 MiB tmpfs nearly filled by another file: a refused request
changes no series (its retry is counted once), and ingest answers OK within 2 s of the
disk having room again. Needs root to mount the tmpfs; skipped otherwise."""

from __future__ import annotations

import asyncio
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.trace import Tracer
from prometheus_client.parser import text_string_to_metric_families

from tests.cli.test_serve import Served, env, free_port, start
from tests.collector.exporters.test_write_ahead import CHAT
from tests.receiver.conftest import T0, llm_span, record_spans

MiB = 1024 * 1024
LLM_PER_REQUEST = 20


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def request_bytes(i: int) -> bytes:
    """LLM_PER_REQUEST chat spans and a plain one with 8 kB of attribute, ~9 kB in all."""
    def build(tracer: Tracer) -> None:
        for k in range(LLM_PER_REQUEST):
            llm_span(tracer, "chat gpt-4o", CHAT, start=T0 + i * 100 + k)
        tracer.start_span("db query", start_time=T0,
                          attributes={"filler": "y" * 8000}).end(end_time=T0 + 1000)

    return bytes(encode_spans(record_spans(build)).SerializeToString())


def counted(metrics_port: int, name: str) -> float:
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == name)


class Sender:
    def __init__(self, port: int) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.export = self.channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=None, response_deserializer=None)

    def send(self, data: bytes) -> bool:
        """True when answered OK, False for RESOURCE_EXHAUSTED (anything else fails)."""
        try:
            self.export(data, timeout=10)
        except grpc.RpcError as exc:
            assert exc.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, exc
            return False
        return True


async def test_disk_full_counts_no_refused_span_and_ingest_resumes_once_there_is_room(
        small_disk: Path) -> None:
    filler = small_disk / "filler"
    filler.write_bytes(b"\x00" * (3 * MiB + 512 * 1024))  # ~0.5 MiB left for the spool
    otlp, metrics = free_port(), free_port()
    environ = env(LLM_OBSERVE_TEMPO_ENDPOINT=f"127.0.0.1:{free_port()}",  # Tempo is down
                  LLM_OBSERVE_SPOOL_DIR=str(small_disk / "spool"),
                  LLM_OBSERVE_WRITE_AHEAD="true", LLM_OBSERVE_OTLP_PORT=str(otlp),
                  LLM_OBSERVE_PORT=str(free_port()), LLM_OBSERVE_METRICS_PORT=str(metrics))
    served: Served = await asyncio.to_thread(start, environ=environ)
    sender: Sender | None = None
    try:
        sender = Sender(otlp)
        acked = refused = 0
        pending = [request_bytes(i) for i in range(200)]
        while pending and not refused:  # until the disk is full
            if sender.send(pending[0]):
                pending.pop(0)
                acked += 1
            else:
                refused += 1
        assert refused and acked >= 5, f"acked {acked}, refused {refused}"
        for _ in range(20):  # the senders retry while the disk stays full
            refused += not sender.send(pending[0])
            await asyncio.sleep(0.05)
        assert refused >= 2
        llm_acked = acked * LLM_PER_REQUEST
        assert counted(metrics, "llm_spans_total") == llm_acked, "a refused span was counted"
        assert counted(metrics, "llm_tokens_total") == llm_acked * 150

        filler.unlink()  # the disk has room
        room_at = time.monotonic()
        while not sender.send(pending[0]):
            assert time.monotonic() - room_at < 10, "ingest still refused 10 s after room"
            await asyncio.sleep(0.05)
        resumed = time.monotonic() - room_at
        print(f"ingest answered OK {resumed:.2f} s after the disk had room")
        pending.pop(0)
        acked += 1
        for data in pending[:10]:
            assert sender.send(data)
            acked += 1
        assert resumed <= 2.0, f"ingest answered OK {resumed:.1f} s after the disk had room"
        assert counted(metrics, "llm_spans_total") == acked * LLM_PER_REQUEST
    finally:
        if sender is not None:
            sender.channel.close()
        code, err = await asyncio.to_thread(served.stop)
    assert code == 0 and "Traceback" not in err
