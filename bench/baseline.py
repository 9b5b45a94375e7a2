"""Run a previous release's receiver beside the current one (``bench.receiver --baseline``).

A git worktree of the given commit is created beside the repository (reused when it is
there: ``../llm-observe-baseline-<commit>``), and a server process imports *that* tree's
``llm_observe`` and runs *that* tree's own ``bench.receiver.run_full``, so the release is
measured as it was built and benchmarked, on the same load, sink and machine as the
current code, in the same run (alternating), and the ratio of the two is the figure.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def worktree(ref: str) -> Path:
    """The path of a detached worktree at ``ref`` beside the repository (made if absent).

    A ``ref`` that is a directory holding ``llm_observe`` is that tree, used as it is (a
    compiled build of the same source, say: bench/README.md, "Branch speed8").
    """
    if (Path(ref) / "llm_observe").is_dir():
        return Path(ref).resolve()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                            check=True, capture_output=True, text=True).stdout.strip()
    path = REPO.parent / f"llm-observe-baseline-{commit[:12]}"
    if not (path / "llm_observe").is_dir():
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(path),
                        commit], check=True, capture_output=True)
    return path


def run_full_at(root: str, sink_port: int, flavour: str, ready: Any, stop: Any,
                report: Any) -> None:
    """Child side: forget the current tree's modules, import ``root``'s, run its receiver."""
    for name in [m for m in sys.modules if m.split(".")[0] in ("bench", "llm_observe")]:
        del sys.modules[name]
    sys.path.insert(0, root)
    from bench import receiver  # root's own bench harness, matching its own API

    assert Path(receiver.__file__).resolve().is_relative_to(Path(root).resolve())
    receiver.run_full(sink_port, flavour, ready, stop, report)


def baseline_figures(samples: dict[str, list[tuple[float, float, float, float]]],
                     refs: list[str]) -> dict[str, dict[str, Any]]:
    """Extra fields for each ``full*`` figure: the median of per-round ratios against its
    ``base_<ref>_full*`` twins (rounds alternate, so a drift in load weighs on all alike)."""
    import statistics

    out: dict[str, dict[str, Any]] = {}
    for name, ours in samples.items():
        if not name.startswith("full"):
            continue
        for ref in refs:
            base = samples.get(f"base_{ref}_{name}")
            if not base:
                continue
            pairs = list(zip(ours, base, strict=False))
            out.setdefault(name, {}).update({
                f"ratio_vs_{ref}": round(statistics.median(o[0] / b[0] for o, b in pairs), 3),
                f"cpu_ratio_vs_{ref}": round(statistics.median(b[2] / o[2] for o, b in pairs),
                                             3),
                f"ratio_vs_{ref}_rounds": [round(o[0] / b[0], 3) for o, b in pairs]})
    return out
