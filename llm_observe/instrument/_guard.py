"""The one ``dont_throw`` guard: our code must never break the host application.

Every piece of instrumentation code that runs inside a user's call (extraction,
attribute building, span export hand-off) runs under this guard. A failure is
logged — with its traceback the first time per function, then at debug level so
a broken provider payload cannot flood the logs — and swallowed. The user's own
exceptions never pass through here: the patch shells re-raise them untouched.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import ParamSpec, TypeVar

logger = logging.getLogger("llm_observe.instrument")

P = ParamSpec("P")
R = TypeVar("R")

_reported: set[str] = set()


def dont_throw(fn: Callable[P, R]) -> Callable[P, R | None]:
    """Run ``fn``; on any ``Exception`` log it and return None instead of raising."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def guarded(*args: P.args, **kwargs: P.kwargs) -> R | None:
        try:
            return fn(*args, **kwargs)
        except Exception:
            report(name)
            return None

    return guarded


def report(where: str) -> None:
    """Log the exception being handled: a warning the first time per place, then debug."""
    if where in _reported:
        logger.debug("llm-observe instrumentation failed in %s", where, exc_info=True)
        return
    _reported.add(where)
    logger.warning(
        "llm-observe instrumentation failed in %s; the call itself is unaffected",
        where, exc_info=True,
    )
