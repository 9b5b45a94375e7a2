"""``serve --workers N`` under an operator's bad day (issue #26, 1 and 5), real processes:
a second supervisor on the same spool stops at start naming the holder; a supervisor
killed with SIGKILL and started again takes over its spool without a second drain of any
``worker-K`` and without losing or duplicating an acknowledged span; the metrics
directory the killed one left is removed by the next start, and each run's own at exit."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from pathlib import Path

from tests.cli.test_serve import Served, free_port, one_line, run_to_exit, start
from tests.cli.test_supervisor import ports, scrape, wait_for
from tests.collector.exporters.test_write_ahead import (
    requests_of_spans,
    send_until_stopped,
    wait_until_empty,
)
from tests.fakes.otlp_sink import OtlpSink


def port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def metrics_dirs(tmp: Path) -> list[Path]:
    return sorted(tmp.glob("llm-observe-metrics-*"))


async def test_a_killed_supervisor_is_replaced_without_a_second_drain(tmp_path: Path) -> None:
    tmp, spool, tempo = tmp_path / "tmp", tmp_path / "spool", free_port()
    tmp.mkdir()
    common = {"TMPDIR": str(tmp), "LLM_OBSERVE_SPOOL_DIR": str(spool),
              "LLM_OBSERVE_WRITE_AHEAD": "true", "LLM_OBSERVE_SHUTDOWN_TIMEOUT_S": "2",
              "LLM_OBSERVE_TEMPO_ENDPOINT": f"127.0.0.1:{tempo}"}  # Tempo is down
    p, environ = ports(**common)
    first: Served = await asyncio.to_thread(start, "--workers", "2", environ=environ)
    acked: set[int] = set()
    try:
        await asyncio.to_thread(send_until_stopped, f"127.0.0.1:{p['grpc']}",
                                requests_of_spans(6, 50), acked, threading.Event())
        assert len(acked) == 300
        [first_dir] = metrics_dirs(tmp)  # the supervisor's metrics directory

        # the same spool, other ports: refused at start, in one line naming the holder
        _, other = ports(**common)
        code, err = await asyncio.to_thread(run_to_exit, "--workers", "2", environ=other)
        line = one_line(err)
        assert code == 1 and str(spool) in line and f"process {first.proc.pid}" in line

        first.proc.send_signal(signal.SIGKILL)  # its workers drain (Tempo still down)...
        await asyncio.to_thread(first.proc.wait, 10)
    finally:
        if first.proc.poll() is None:
            first.proc.kill()
    assert metrics_dirs(tmp) == [first_dir], "left behind by the kill"
    await asyncio.to_thread(wait_for, lambda: port_free(p["grpc"]) and port_free(p["http"]))
    # ...and the new supervisor starts while they still do: its workers wait for them
    second: Served = await asyncio.to_thread(start, "--workers", "2", environ=environ)
    sink = OtlpSink(port=tempo)
    try:
        assert first_dir not in metrics_dirs(tmp), "the stale directory is removed"
        assert len(metrics_dirs(tmp)) == 1  # the new supervisor's own
        await sink.start()  # Tempo is back
        await sink.wait_for_spans(len(acked), timeout=60)
        await wait_until_empty(spool / "worker-0", timeout=30)
        await wait_until_empty(spool / "worker-1", timeout=30)
        samples = await asyncio.to_thread(scrape, p["metrics"])
    finally:
        code, err = await asyncio.to_thread(second.stop, signal.SIGTERM)
        await sink.stop()
    ids = [int.from_bytes(s.span_id, "big") for s in sink.spans()]
    assert acked - set(ids) == set(), f"{len(acked - set(ids))} acknowledged spans lost"
    assert len(ids) == len(set(ids)), f"{len(ids) - len(set(ids))} spans delivered twice"
    dropped = sum(v for (name, _), v in samples.items()
                  if name == "llm_observe_otlp_dropped_spans_total")
    assert dropped == 0
    assert code == 0 and "Traceback" not in err
    assert metrics_dirs(tmp) == [], "removed at exit"
