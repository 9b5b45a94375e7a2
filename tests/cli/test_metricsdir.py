"""Stale metrics directories of killed supervisors are removed; live ones never."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from llm_observe.cli.metricsdir import make_metrics_dir, remove_stale


def test_only_directories_of_gone_supervisors_are_removed(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)
    stale = tmp_path / f"llm-observe-metrics-{dead_pid}-abc"
    live = tmp_path / f"llm-observe-metrics-{os.getppid()}-def"
    foreign = tmp_path / "llm-observe-metrics-notapid"  # not ours to judge
    for path in (stale, live, foreign):
        path.mkdir()
        (path / "counter_1.db").write_bytes(b"x")
    assert remove_stale(str(tmp_path)) == [stale]
    assert not stale.exists() and live.exists() and foreign.exists()


def test_a_new_directory_is_named_after_this_process(tmp_path: Path) -> None:
    path = Path(make_metrics_dir(str(tmp_path)))
    assert path.parent == tmp_path and path.name.startswith(f"llm-observe-metrics-{os.getpid()}-")
    assert remove_stale(str(tmp_path)) == []  # this process is alive
