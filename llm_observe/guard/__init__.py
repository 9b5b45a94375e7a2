"""The optional encoder tier of injection detection (issue 23; docs/scanning.md).

A 2-layer student of all-MiniLM-L6-v2 (its layers + head shipped here, the embedding
tables from the ``[embeddings]`` extra's base weights), int8 on onnxruntime. Scan
requests (the API, :func:`guarded_scanner`) read it on every untrusted part and decide
by the combined verdict (guard/stack.py); the span path only with ``guard.spans``, where
the word model gates it under a budget. Needs the ``[guard]`` extra; without it the
phrases, regexes and word model work as before. Public surface:

- :func:`load_files` / :class:`GuardModel`: the verified weights and the model;
- :class:`GuardTier` / :class:`GuardConfig`: gate and budget, loading in the background;
- :func:`guard_processor`: the pipeline stage for a patterns file's ``guard:`` section,
  or None (disabled, or the extra missing: one log line);
- :func:`guarded_scanner`: the in-process library's scanner with the tier on
  (scan/requests.py: ``.text(s)``, ``.messages([(role, content), ...])``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from llm_observe.guard.files import GuardRefused, GuardUnavailable, load_files

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from llm_observe.processors.guard import GuardProcessor
    from llm_observe.scan.patterns import PatternSet
    from llm_observe.scan.requests import RequestScanner

log = logging.getLogger(__name__)

__all__ = ["GuardRefused", "GuardUnavailable", "guard_processor", "guarded_scanner",
           "load_files"]


def guard_processor(patterns: PatternSet, registry: CollectorRegistry | None = None,
                    max_text_chars: int = 100_000, cache_dir: str | None = None,
                    ) -> GuardProcessor | None:
    """The encoder stage, or None when the tier is off or cannot run here (logged once).

    The model loads in a background thread; until it is ready texts are skipped
    (``not_ready``), and a load failure (missing base weights, corrupted delta) is one
    warning line: the cheap tiers carry on."""
    section = patterns.guard
    if not section.enabled or not patterns.classifier.enabled:
        return None
    try:
        import onnxruntime  # noqa: F401
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401

        from llm_observe.guard.model import GuardModel
        from llm_observe.guard.stack import from_manifest
        from llm_observe.guard.tier import GuardConfig, GuardTier
        from llm_observe.processors.guard import GuardProcessor, thresholds_from
        from llm_observe.scan.classifier import shared_model
        files = load_files()
    except (ImportError, GuardUnavailable, GuardRefused) as exc:
        log.warning("injection guard tier off: %s (install llm-observe[guard])"
                    if isinstance(exc, ImportError) else "injection guard tier off: %s", exc)
        return None
    gate = section.gate if section.gate is not None else float(files.manifest.get("gate", 0.05))
    tier = GuardTier(GuardConfig(gate=gate), lambda: GuardModel(files, cache_dir=cache_dir),
                     eager=section.spans)  # scan requests only: load on the first one
    stack = from_manifest(files.manifest)  # thresholds then apply to its combined value
    shipped = dict(stack.thresholds) if stack is not None else files.thresholds()
    rule = thresholds_from(dict(section.thresholds), shipped)
    return GuardProcessor(tier, shared_model(), rule, max_text_chars, registry, stack)


def guarded_scanner(patterns: PatternSet | None = None, wait: float | None = 120.0,
                    ) -> RequestScanner:
    """A scanner for in-process use with the encoder tier switched on (whatever the
    patterns file's ``guard.enabled`` says), deciding as ``POST /v1/pii-injection/scan``
    does (the combined verdict on every untrusted part, processors/guard.py ``verdict``).
    Waits up to ``wait`` seconds for the model to load. Without the [guard] extra or its
    files: the cheap tiers only, after one log line."""
    from dataclasses import replace

    from llm_observe.scan import Scanner, load_patterns
    from llm_observe.scan.requests import RequestScanner

    patterns = patterns if patterns is not None else load_patterns()
    stage = guard_processor(replace(patterns, guard=replace(patterns.guard, enabled=True)))
    if stage is not None and wait is not None:
        stage.tier.wait(wait)  # type: ignore[attr-defined]
    return RequestScanner(Scanner(patterns), stage)
