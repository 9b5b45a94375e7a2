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
                    "--web.listen-address=127.0.0.1:19090", "--log.level=warn"]
    cfg = yaml.safe_load(config.read_text())
    assert cfg["global"]["scrape_interval"] == "2s"
    assert cfg["global"]["scrape_timeout"] == "2s"
    assert cfg["scrape_configs"][0]["static_configs"][0]["targets"] == ["127.0.0.1:19464"]
