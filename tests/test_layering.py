"""The package's layering, computed from its import statements (lazy imports included).

The folders show the data path: doors (``receiver``, ``api``) decode into pipeline
batches, ``processors`` enrich, exporters (``collector``) send. These tests fail the
moment an import crosses the layering, and keep modules small.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "llm_observe"
DOORS = {"receiver", "api", "cli"}
EXPORTERS = {"collector"}
MAX_MODULE_LINES = 300


def _unit(path: Path) -> str:
    """The subpackage (or top-level module) a file belongs to."""
    parts = path.relative_to(ROOT).parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _imports(path: Path) -> set[str]:
    """Every llm_observe.<unit> a file imports, at any depth of the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "llm_observe":  # from llm_observe import providers, ...
                names = [f"llm_observe.{alias.name}" for alias in node.names]
        for name in names:
            if name.startswith("llm_observe."):
                unit = name.split(".")[1]
                if (ROOT / unit).is_dir() or (ROOT / f"{unit}.py").exists():
                    found.add(unit)
    return found


def graph() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        unit = _unit(path)
        if unit == "__init__":  # the public facade re-exports; it is no layer
            continue
        edges[unit] |= _imports(path) - {unit}
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among units, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(unit: str) -> list[str] | None:
        state[unit] = 1
        stack.append(unit)
        for nxt in sorted(edges.get(unit, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[unit] = 2
        return None

    for unit in sorted(edges):
        if unit not in state and (found := visit(unit)):
            return found
    return None


def test_the_graph_is_computed_from_real_imports() -> None:
    edges = graph()
    # A few edges the data path must have, so an empty or broken graph cannot pass.
    assert "pipeline" in edges["receiver"] and "otlp" in edges["receiver"]
    assert "pipeline" in edges["collector"] and "api" in edges["cli"]


def test_no_cycles_among_subpackages() -> None:
    assert _cycle(graph()) is None


def test_a_cycle_would_be_found() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


@pytest.mark.parametrize("unit", ["otlp", "pipeline"])
def test_codec_and_pipeline_import_no_door_or_exporter(unit: str) -> None:
    assert not graph()[unit] & (DOORS | EXPORTERS)


def test_the_app_side_imports_nothing_of_the_collector_side() -> None:
    assert not graph()["instrument"] & {"receiver", "collector", "processors", "api", "pipeline"}


def test_processors_import_no_door_or_exporter() -> None:
    assert not graph()["processors"] & (DOORS | EXPORTERS)


def test_no_module_over_300_lines() -> None:
    long = {str(p.relative_to(ROOT)): n for p in ROOT.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    assert long == {}
