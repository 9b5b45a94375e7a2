"""Health of the shared state in Redis (docs/scale-out.md, "Redis down"): one per registry,
shared by every store that keeps state there (processors/chainstore.py,
agents/runstore.py, agents/dedupstore.py).

Contract: a store asks :meth:`available` before a round trip and reports a failure with
:meth:`failed`; then no store of this process asks Redis again for ``retry_s`` (they use
their per-process fallback), the failure is counted in
``llm_observe_shared_state_errors_total{op}`` and logged at most once a minute. Thread-safe.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref

from prometheus_client import CollectorRegistry, Counter

log = logging.getLogger(__name__)
_BY_REGISTRY: weakref.WeakKeyDictionary[CollectorRegistry, SharedStateHealth] = (
    weakref.WeakKeyDictionary())
_LOCK = threading.Lock()


class SharedStateHealth:
    def __init__(self, registry: CollectorRegistry | None = None, retry_s: float = 5.0) -> None:
        self.retry_s = retry_s
        self._down_until = 0.0
        self._last_log = 0.0
        self._lock = threading.Lock()
        self.errors = Counter("llm_observe_shared_state_errors", "Shared-state (Redis) "
                              "operations that failed; their spans used this process's own "
                              "state", ["op"], registry=registry)

    def available(self) -> bool:
        return time.monotonic() >= self._down_until

    def failed(self, op: str, exc: Exception) -> None:
        self.errors.labels(op).inc()
        now = time.monotonic()
        with self._lock:
            self._down_until = now + self.retry_s
            if now - self._last_log >= 60.0:
                self._last_log = now
                log.warning("shared state (Redis) unavailable for %s: %s; tool-call chains, "
                            "agent runs and dedup use this process's state for %.0f s", op, exc,
                            self.retry_s)


def health_for(registry: CollectorRegistry | None, retry_s: float = 5.0) -> SharedStateHealth:
    """The registry's one :class:`SharedStateHealth` (a new one without a registry)."""
    if registry is None:
        return SharedStateHealth(None, retry_s)
    with _LOCK:
        health = _BY_REGISTRY.get(registry)
        if health is None:
            health = _BY_REGISTRY[registry] = SharedStateHealth(registry, retry_s)
        return health
