"""Helpers shared by the provisioning tests: read rendered dashboards and their targets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from llm_observe.provisioning.render import DASHBOARD_FILES

AGENTS_DASHBOARD = "llm-agents-dashboard"  # proven by test_agents_dashboard.py


def load_dashboards(out_dir: Path) -> dict[str, dict[str, Any]]:
    """uid -> dashboard JSON of every rendered dashboard file."""
    boards = [json.loads((out_dir / name).read_text()) for name in DASHBOARD_FILES]
    return {b["uid"]: b for b in boards}


def targets_of(panel: dict[str, Any]) -> list[dict[str, Any]]:
    """The panel's Prometheus query targets (every panel here has at least one)."""
    return [t for t in panel.get("targets", []) if "expr" in t]
