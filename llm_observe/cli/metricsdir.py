"""The metrics directory of ``serve --workers N`` when ``PROMETHEUS_MULTIPROC_DIR`` is not
given: ``<tmp>/llm-observe-metrics-<supervisor pid>-<random>``.

A supervisor removes its directory when it exits; one killed (SIGKILL, OOM) cannot, so
each start first removes the directories whose supervisor pid is gone. The pid is in the
name, so telling a live owner from a dead one needs no lock and no file inside that could
be half written; a directory of a live supervisor is never touched. (A recycled pid keeps
a stale directory until that pid is free again: harmless, and rare.)
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger("llm_observe.serve")

PREFIX = "llm-observe-metrics-"
_OWNED = re.compile(re.escape(PREFIX) + r"(\d+)-[^/]+")


def make_metrics_dir(parent: str | None = None) -> str:
    """A fresh directory named after this process, after removing stale ones."""
    parent = parent or tempfile.gettempdir()
    remove_stale(parent)
    return tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=parent)


def remove_stale(parent: str) -> list[Path]:
    """Remove every ``llm-observe-metrics-<pid>-*`` directory under ``parent`` whose pid is
    not a live process; return what was removed."""
    removed = []
    for path in Path(parent).glob(f"{PREFIX}*"):
        match = _OWNED.fullmatch(path.name)
        if match is None or not path.is_dir() or _alive(int(match.group(1))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    if removed:
        log.info("removed %d metrics directories of supervisors that are gone",
                 len(removed))
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True
