"""The text leaves of a JSON document (message lists, request bodies, tool schemas).

A structured value is scanned leaf by leaf: every string (and every integer long
enough to be a card, phone or account number) is a *piece*, in document order,
except the scalar values of metadata members (:data:`textkeys.JSON_METADATA`: roles,
part types, ids, model names) and binary payloads (a semconv ``blob`` part's base64
``content``, ``data:...;base64,`` URLs), which no pattern can read. Object keys are
field names and are not scanned. A redacted piece is written back at its path, so the
document stays valid JSON with only the secret replaced.
"""

from __future__ import annotations

import json
from typing import Any

from llm_observe.otlp.textkeys import JSON_METADATA

Path = tuple[str | int, ...]
MIN_NUMBER_DIGITS = 7  # shorter integers (counts, token limits, flags) hold no PII


def parse(value: str) -> Any:
    """The JSON object or array in ``value``, or None when it holds neither."""
    if value[:1] not in ("[", "{") and value.lstrip()[:1] not in ("[", "{"):
        return None
    try:
        doc = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return doc if isinstance(doc, (dict, list)) else None


def is_binary(value: str) -> bool:
    """A base64 data URL: an encoded image or file, not text."""
    return value.startswith("data:") and ";base64," in value[:128]


def number_piece(value: Any) -> str | None:
    """An integer leaf long enough to be a card/phone/account number, as text."""
    if isinstance(value, int) and not isinstance(value, bool):
        text = str(value)
        if len(text.lstrip("-")) >= MIN_NUMBER_DIGITS:
            return text
    return None


class TooDeep(Exception):
    """A document nested deeper than :data:`MAX_DEPTH`: read as plain text instead."""


MAX_DEPTH = 64  # a fixed bound, so the reader and the redactor always agree


def leaves(doc: Any, pieces: list[str], paths: list[Path] | None = None) -> None:
    """Append the text leaves of ``doc`` (a parsed dict or list), and their paths when
    ``paths`` is given; raise :class:`TooDeep` past :data:`MAX_DEPTH` levels."""
    _leaves(doc, (), 0, pieces, paths)


def _leaves(node: Any, path: Path, depth: int, pieces: list[str],
            paths: list[Path] | None) -> None:
    if depth > MAX_DEPTH:
        raise TooDeep
    items: Any
    if isinstance(node, dict):
        blob = node.get("type") == "blob"
        items = node.items()
    else:
        blob, items = False, enumerate(node)
    for key, value in items:
        if isinstance(value, str):
            if not value or key in JSON_METADATA or is_binary(value) or (
                    blob and key == "content"):
                continue
        elif isinstance(value, (dict, list)):
            _leaves(value, (*path, key) if paths is not None else path, depth + 1, pieces,
                    paths)
            continue
        else:
            value = number_piece(value) if key not in JSON_METADATA else None
            if value is None:
                continue
        pieces.append(value)
        if paths is not None:
            paths.append((*path, key))


def set_leaf(doc: Any, path: Path, value: str) -> None:
    """Replace the leaf at ``path`` (never the root: a document is a dict or list)."""
    node = doc
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def dumps(doc: Any) -> str:
    """``doc`` as JSON text, as compact as the SDKs write it, non-ASCII kept."""
    return json.dumps(doc, ensure_ascii=False)
