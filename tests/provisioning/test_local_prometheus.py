"""start_local_prometheus: the native-mode Prometheus (the running case is exercised by
test_dashboard_queries, whose `prometheus` fixture starts it)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm_observe.provisioning.local_prometheus import start_local_prometheus


def test_no_binary_on_path_says_how_to_get_one(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory
    with pytest.raises(FileNotFoundError, match="apt-get install prometheus"):
        start_local_prometheus(tmp_path / "out", 9464, 9090)


def test_the_binary_gets_the_rendered_config_and_loopback_flags(tmp_path: Path) -> None:
    # a stand-in binary that records its arguments, to check the exact command line
    fake = tmp_path / "prometheus"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$(dirname "$0")/args"\n')
    fake.chmod(0o755)
    proc = start_local_prometheus(tmp_path / "out", 19464, 19090, scrape_interval="2s",
                                  binary=str(fake))
    assert proc.wait(10) == 0
    args = (tmp_path / "args").read_text().splitlines()
    config = tmp_path / "out/prometheus/prometheus.yml"
    assert args == [f"--config.file={config}",
                    f"--storage.tsdb.path={tmp_path / 'out/prometheus/data'}",
                    "--storage.tsdb.retention.time=15d",
                    "--web.listen-address=127.0.0.1:19090", "--log.level=warn",
                    "--enable-feature=exemplar-storage"]
    cfg = yaml.safe_load(config.read_text())
    assert cfg["global"]["scrape_interval"] == "2s"
    assert cfg["global"]["scrape_timeout"] == "2s"
    assert cfg["scrape_configs"][0]["static_configs"][0]["targets"] == ["127.0.0.1:19464"]


async def test_a_token_guarded_metrics_endpoint_is_scraped_by_the_rendered_prometheus(
        tmp_path: Path) -> None:
    """Real Prometheus, real scrape endpoint with LLM_OBSERVE_METRICS_TOKEN: the rendered
    config's authorization block makes the target up; without it the target is down
    with a 401."""
    import asyncio
    import socket

    import aiohttp
    from prometheus_client import CollectorRegistry, Counter

    from llm_observe.api.scrape import ScrapeServer
    from llm_observe.provisioning.local_prometheus import stop_local_prometheus, wait_ready

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])

    registry = CollectorRegistry()
    Counter("llm_probe", "a probe", registry=registry).inc()
    scrape = ScrapeServer(registry, "127.0.0.1", token="s3cret-token")
    await scrape.start(0)
    assert scrape.port is not None
    cfg = tmp_path / "ok/prometheus/metrics-token"
    healths: dict[str, str] = {}
    procs = []
    try:
        for name, token in (("ok", "s3cret-token"), ("none", None)):
            ui = free_port()
            proc = start_local_prometheus(tmp_path / name, scrape.port, ui, scrape_interval="1s",
                                          metrics_token=token)
            procs.append(proc)
            await asyncio.to_thread(wait_ready, ui, proc)
            async with aiohttp.ClientSession() as session:
                for _ in range(100):
                    async with session.get(f"http://127.0.0.1:{ui}/api/v1/targets") as resp:
                        targets = (await resp.json())["data"]["activeTargets"]
                    mine = [t for t in targets if t["labels"]["job"] == "llm-observe"]
                    if mine and mine[0]["health"] != "unknown":
                        healths[name] = mine[0]["health"] + " " + mine[0]["lastError"]
                        break
                    await asyncio.sleep(0.2)
    finally:
        for proc in procs:
            stop_local_prometheus(proc)
        await scrape.stop()
    assert healths["ok"].strip() == "up"
    assert healths["none"].startswith("down") and "401" in healths["none"]
    assert cfg.read_text() == "s3cret-token" and cfg.stat().st_mode & 0o777 == 0o600
