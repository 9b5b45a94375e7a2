"""The built ONNX graphs, cached in a user cache directory keyed by a hash of the weights.

Building takes ~1 s (fp32) or ~3 s (int8, with its calibration pass); loading a cached graph
takes ~0.1 s. The key covers everything the graph bytes depend on: the weights' SHA-256, the
variant and :data:`GRAPH_VERSION` (bumped whenever graph.py or quantize.py change what they
emit), so a new weights package or a new release never loads a stale graph. Files are written
to a temporary name and renamed, so two processes warming up at once never see half a file.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

GRAPH_VERSION = 1
ENV_CACHE_DIR = "LLM_OBSERVE_CACHE_DIR"


def cache_root(configured: str | None = None) -> Path:
    """The directory for our graphs: the configured one, else $LLM_OBSERVE_CACHE_DIR, else
    $XDG_CACHE_HOME/llm-observe/embedding (~/.cache/llm-observe/embedding)."""
    if configured:
        return Path(configured).expanduser()
    env = os.environ.get(ENV_CACHE_DIR)
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "llm-observe" / "embedding"


def graph_key(weights_sha256: str, variant: str) -> str:
    """Cache key of one graph: weights hash + variant + graph-builder version."""
    material = f"{weights_sha256}|{variant}|v{GRAPH_VERSION}".encode()
    return hashlib.sha256(material).hexdigest()[:32]


def graph_path(root: Path, weights_sha256: str, variant: str) -> Path:
    """Where the graph for these weights and variant lives (it may not exist yet)."""
    return root / f"minilm-l6-{variant}-{graph_key(weights_sha256, variant)}.onnx"


def load_or_build(path: Path, build: Callable[[], bytes]) -> tuple[Path, bool]:
    """Return ``(path, built)``: build and store the graph only if it is not cached yet."""
    if path.is_file():
        return path, False
    data = build()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path, True
