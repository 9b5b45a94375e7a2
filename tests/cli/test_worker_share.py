"""serve --workers N: the API's offload bounds are the host's, split over the workers."""

from __future__ import annotations

import dataclasses

import pytest

from llm_observe.cli.worker import for_worker, offload_bounds, share, worker_count
from llm_observe.collector.settings import Settings


@pytest.mark.parametrize("total", [1, 2, 3, 7, 8, 64])
@pytest.mark.parametrize("count", [1, 2, 3, 8])
def test_the_workers_shares_add_up_to_the_hosts_bound(total: int, count: int) -> None:
    parts = [share(total, k, count) for k in range(count)]
    assert min(parts) >= 1  # a worker with no thread could never serve that kind of work
    assert sum(parts) == max(total, count)
    assert max(parts) - min(parts) <= 1


def test_a_worker_takes_its_share_of_every_bound_and_its_own_spool() -> None:
    host = dataclasses.replace(Settings(), spool_dir="/var/spool/llm", api_scan_running=4,
                               api_scan_waiting=16, api_body_running=3, api_body_waiting=9)
    workers = [for_worker(host, k, 2) for k in range(2)]
    assert [w.spool_dir for w in workers] == ["/var/spool/llm/worker-0",
                                              "/var/spool/llm/worker-1"]
    assert [w.api_scan_running for w in workers] == [2, 2]
    assert [w.api_body_running for w in workers] == [2, 1]
    for name, total in offload_bounds(host).items():
        assert sum(getattr(w, name) for w in workers) == total, name
    assert set(offload_bounds(host)) == {f"api_{kind}_{part}" for kind in ("scan", "embed", "body")
                                         for part in ("running", "waiting")}
    # the deadline is not a quantity of work: each worker keeps it whole
    assert all(w.api_offload_wait_s == host.api_offload_wait_s for w in workers)


def test_one_process_keeps_the_bounds_whole() -> None:
    host = Settings()
    assert worker_count({}) == 1 and worker_count({"LLM_OBSERVE_WORKER_COUNT": "x"}) == 1
    assert offload_bounds(for_worker(host, 0, worker_count({}))) == offload_bounds(host)
