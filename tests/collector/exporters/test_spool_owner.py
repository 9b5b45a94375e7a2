"""One owner per spool directory (issue #26, 1): a second collector on a directory stops
at start with one line naming the directory and the holder, instead of numbering over
the first one's files and deleting its temporaries; a worker whose predecessor still
drains ``worker-K`` waits for it. Real ``serve`` processes on loopback."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from llm_observe.collector.exporters.otlp_forwarder.spool import Spool
from llm_observe.dirlock import DirectoryBusy
from tests.cli.test_serve import Served, env, free_port, start
from tests.collector.exporters.test_otlp_forwarder import spool_files
from tests.collector.exporters.test_write_ahead import requests_of_spans, send_until_stopped


def test_a_second_spool_on_a_directory_is_refused_and_leaves_its_files(tmp_path: Path) -> None:
    first = Spool(tmp_path, 1 << 20)
    first.write(3, b"x" * 10)
    writing = tmp_path / "0000000000000001-5.tmp"  # the owner's write in progress
    writing.write_bytes(b"half")
    with pytest.raises(DirectoryBusy) as refused:
        Spool(tmp_path, 1 << 20)
    assert str(tmp_path) in str(refused.value)
    assert f"process {os.getpid()}" in str(refused.value)
    assert writing.exists() and len(spool_files(tmp_path)) == 1  # nothing touched
    first.close()
    second = Spool(tmp_path, 1 << 20)  # the owner let go: the next one takes over
    assert second.spans == 3 and not writing.exists()  # a dead owner's temporary goes
    second.close()


def serve_env(spool: Path, **extra: str) -> dict[str, str]:
    return env(LLM_OBSERVE_TEMPO_ENDPOINT=f"127.0.0.1:{free_port()}",  # Tempo is down
               LLM_OBSERVE_SPOOL_DIR=str(spool), LLM_OBSERVE_WRITE_AHEAD="true",
               LLM_OBSERVE_OTLP_PORT=str(free_port()), LLM_OBSERVE_PORT=str(free_port()),
               LLM_OBSERVE_METRICS_PORT=str(free_port()), **extra)


async def test_a_second_collector_on_one_spool_stops_at_start_naming_the_holder(
        tmp_path: Path) -> None:
    spool = tmp_path / "spool"
    first_env = serve_env(spool)
    first: Served = await asyncio.to_thread(start, environ=first_env)
    acked: set[int] = set()
    stop = threading.Event()
    try:
        endpoint = f"127.0.0.1:{first_env['LLM_OBSERVE_OTLP_PORT']}"
        await asyncio.to_thread(send_until_stopped, endpoint, requests_of_spans(4, 50),
                                acked, stop)
        assert len(acked) == 200
        files = spool_files(spool)
        second = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "llm_observe.cli", "serve"],
            env=serve_env(spool), capture_output=True, text=True, timeout=60)
        assert second.returncode == 1, second.stdout + second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert str(spool) in lines[0] and f"process {first.proc.pid}" in lines[0]
        assert spool_files(spool) == files and first.proc.poll() is None  # untouched
    finally:
        code, err = await asyncio.to_thread(first.stop)
    assert code == 0 and "Traceback" not in err


HOLD = """
import sys, time
from llm_observe.collector.exporters.otlp_forwarder.spool import Spool
spool = Spool(sys.argv[1], 1 << 20)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_worker_waits_for_its_predecessor_to_let_the_directory_go(tmp_path: Path) -> None:
    """A previous supervisor's worker 0 still drains ``worker-0`` (here: a process that
    holds it for 6 s); the new worker 0 starts serving only once it is gone."""
    spool = tmp_path / "spool"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(spool / "worker-0"), "6"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    began = time.monotonic()
    worker = start(environ=serve_env(spool, LLM_OBSERVE_WORKER_INDEX="0"))
    ready_after = time.monotonic() - began
    try:
        assert holder.poll() is not None, "the worker became ready while the directory " \
            "was still held"
        assert ready_after >= 5.5
    finally:
        holder.wait(10)
        code, err = worker.stop()
    assert code == 0 and "Traceback" not in err
    assert f"held by process {holder.pid}; waiting" in err
