"""docker/fetch-verified, the full target's download step, run for real against a
local HTTP server: a pinned checksum must match, an empty one is read from the release's
published list (and printed), and anything that does not match stops the build."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "docker/fetch-verified"
PAYLOAD = os.urandom(4096)
SUM = hashlib.sha256(PAYLOAD).hexdigest()
OTHER = hashlib.sha256(b"something else").hexdigest()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def release(tmp_path: Path) -> Iterator[str]:
    """A release directory served on loopback: the archive and two checksum lists."""
    served = tmp_path / "served"
    served.mkdir()
    (served / "tempo_9.9.9_linux_amd64.tar.gz").write_bytes(PAYLOAD)
    (served / "SHA256SUMS").write_text(f"{OTHER}  tempo_9.9.9_linux_arm64.tar.gz\n"
                                       f"{SUM}  tempo_9.9.9_linux_amd64.tar.gz\n")
    (served / "archive.tar.gz.sha256").write_text(f"{SUM}\n")  # Grafana's form: the sum only
    (served / "BADSUMS").write_text(f"{OTHER}  tempo_9.9.9_linux_amd64.tar.gz\n")
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Quiet, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def fetch(tmp_path: Path, url: str, sum_: str, sums: str = "",
          name: str = "tempo_9.9.9_linux_amd64.tar.gz") -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    env = {**os.environ, "no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1"}
    return subprocess.run(["sh", str(SCRIPT), url, name, sum_, *([sums] if sums else [])],
                          cwd=work, env=env, capture_output=True, text=True, timeout=60,
                          check=False)


def test_a_pinned_checksum_must_match(release: str, tmp_path: Path) -> None:
    url = f"{release}/tempo_9.9.9_linux_amd64.tar.gz"
    assert fetch(tmp_path, url, SUM).returncode == 0
    assert (tmp_path / "work/tempo_9.9.9_linux_amd64.tar.gz").read_bytes() == PAYLOAD
    wrong = fetch(tmp_path, url, OTHER)
    assert wrong.returncode != 0 and "FAILED" in wrong.stdout + wrong.stderr


def test_an_empty_checksum_is_read_from_the_published_list_and_printed(
        release: str, tmp_path: Path) -> None:
    url = f"{release}/tempo_9.9.9_linux_amd64.tar.gz"
    done = fetch(tmp_path, url, "", f"{release}/SHA256SUMS")
    assert done.returncode == 0, done.stderr
    assert f"checksum of tempo_9.9.9_linux_amd64.tar.gz from {release}/SHA256SUMS: {SUM}" \
        in done.stdout
    bare = fetch(tmp_path, url, "", f"{release}/archive.tar.gz.sha256")
    assert bare.returncode == 0, bare.stderr


def test_a_list_that_disagrees_or_lacks_the_file_stops_the_build(
        release: str, tmp_path: Path) -> None:
    url = f"{release}/tempo_9.9.9_linux_amd64.tar.gz"
    assert fetch(tmp_path, url, "", f"{release}/BADSUMS").returncode != 0
    missing = fetch(tmp_path, f"{release}/SHA256SUMS", "", f"{release}/BADSUMS",
                    name="SHA256SUMS")
    assert missing.returncode != 0
    assert "SHA256SUMS is not in" in missing.stderr
    assert fetch(tmp_path, url, "").returncode != 0  # no checksum and no list
