"""The Patcher port, the table-driven patcher every built-in target uses, and the registry.

One table per target drives both ``patch`` and ``unpatch`` (so the two can never
drift); ``unpatch`` puts back the identical original object. A target whose library is
installed but not yet imported is patched the moment it is imported (wrapt post-import
hook), so ``init_auto_instrumentation()`` never pays for importing LiteLLM or LangChain
an application does not use.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Protocol, runtime_checkable

import wrapt

from llm_observe.instrument._guard import logger, report
from llm_observe.instrument.calls import Wrapper


@runtime_checkable
class Patcher(Protocol):
    """A patch target. ``available()`` is cheap and never imports the target library;
    ``patch()`` / ``unpatch()`` are idempotent and may raise (the registry logs it)."""

    name: str

    def available(self) -> bool: ...

    def patch(self) -> None: ...

    def unpatch(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Wrap:
    """One entry of a target's table: ``module[.owner].attribute`` gets ``wrapper``."""

    module: str
    owner: str  # class name inside ``module``, "" for a module-level function
    attribute: str
    wrapper: Wrapper
    optional: bool = False  # absent in some library versions: skip quietly


class TablePatcher:
    """A Patcher driven by a table of ``Wrap`` entries."""

    def __init__(self, name: str, requires: str, table: Sequence[Wrap]) -> None:
        self.name = name
        self.requires = requires
        self.table = tuple(table)
        self._saved: list[tuple[Any, str, Any]] = []
        self._wanted = False
        self._hooked: set[str] = set()
        self._lock = threading.RLock()

    def available(self) -> bool:
        try:
            return importlib.util.find_spec(self.requires) is not None
        except (ImportError, ValueError):
            return False

    def _is_wanted(self) -> bool:
        return self._wanted

    @property
    def patched(self) -> bool:
        return bool(self._saved)

    def patch(self) -> None:
        with self._lock:
            self._wanted = True
            for module_name in {w.module for w in self.table}:
                if module_name in sys.modules:
                    self._apply(module_name)
                elif module_name not in self._hooked:
                    self._hooked.add(module_name)
                    wrapt.register_post_import_hook(self._on_import, module_name)

    def _on_import(self, module: ModuleType) -> None:
        try:
            with self._lock:
                if self._wanted:
                    self._apply(module.__name__)
        except Exception:
            report(f"patcher {self.name} on import of {module.__name__}")

    def _apply(self, module_name: str) -> None:
        module = sys.modules[module_name]
        done = {(id(owner), attr) for owner, attr, _ in self._saved}
        for entry in self.table:
            if entry.module != module_name:
                continue
            owner: Any = getattr(module, entry.owner, None) if entry.owner else module
            original = (vars(owner).get(entry.attribute) if owner is not None else None)
            if original is None:
                if not entry.optional:
                    logger.warning("llm-observe: %s.%s.%s not found; not patched",
                                   entry.module, entry.owner, entry.attribute)
                continue
            if (id(owner), entry.attribute) in done:
                continue
            # ``enabled`` is checked on every call: a bound method someone cached while we
            # were patched (LiteLLM keeps ``with_raw_response.create``) goes quiet on unpatch.
            wrapper = wrapt.FunctionWrapper(original, entry.wrapper, enabled=self._is_wanted)
            setattr(owner, entry.attribute, wrapper)
            self._saved.append((owner, entry.attribute, original))

    def unpatch(self) -> None:
        with self._lock:
            self._wanted = False
            while self._saved:
                owner, attribute, original = self._saved.pop()
                setattr(owner, attribute, original)


_lock = threading.RLock()
_registry: dict[str, Patcher] = {}
_status: dict[str, str] = {}
_active = {"on": False}

PATCHED = "patched"
WAITING = "waiting for import"
NOT_INSTALLED = "not installed"
FAILED = "failed"
OFF = "off"


def register_patcher(patcher: Patcher) -> None:
    """Add a custom patch target (replacing one of the same name); patched at once if
    instrumentation is on."""
    with _lock:
        old = _registry.get(patcher.name)
        if old is not None and old is not patcher:
            _safe(old.unpatch, old.name)
        _registry[patcher.name] = patcher
        _status[patcher.name] = OFF
        if _active["on"]:
            _patch_one(patcher)


def _safe(fn: Any, name: str) -> bool:
    try:
        fn()
        return True
    except Exception:
        report(f"patcher {name}")
        return False


def _patch_one(patcher: Patcher) -> None:
    try:
        available = patcher.available()
    except Exception:
        report(f"patcher {patcher.name}.available")
        available = False
    if not available:
        _status[patcher.name] = NOT_INSTALLED
        return
    if not _safe(patcher.patch, patcher.name):
        _status[patcher.name] = FAILED
        return
    waiting = getattr(patcher, "patched", True) is False  # a hook waits for the import
    _status[patcher.name] = WAITING if waiting else PATCHED


def instrument_all() -> dict[str, str]:
    """Patch every registered target (idempotent); returns each target's status."""
    with _lock:
        if not _active["on"]:
            _active["on"] = True
            for patcher in _registry.values():
                _patch_one(patcher)
        return status()


def unpatch_all() -> None:
    """Remove every patch of every registered target."""
    with _lock:
        _active["on"] = False
        for patcher in _registry.values():
            _safe(patcher.unpatch, patcher.name)
            _status[patcher.name] = OFF


def status() -> dict[str, str]:
    """Each registered target's state: patched, waiting for import, not installed, failed, off."""
    with _lock:
        out = dict(_status)
        for name, patcher in _registry.items():
            if out.get(name) == WAITING and getattr(patcher, "patched", False):
                out[name] = _status[name] = PATCHED
        return out


def is_active() -> bool:
    return _active["on"]
