"""A value per span attribute *key set*, recognised without building the set.

The dialect plan (:mod:`otlp.plan`) and the text families of each side
(:func:`otlp.texts.both_sides`) depend only on which keys a span's attributes hold, so
they are cached per key set. Keying a dict by ``frozenset(attrs)`` turns every key of
the upb map into a fresh ``str`` and hashes it: ~16k instructions a span of ~14 keys,
the largest single item of walk + map (``bench.stages``). Spans of one sender share
their key set, so the key sets seen last for a size are tried first: ``n`` ``in`` tests
on the map (no key object built, ~6k). A map of ``n`` distinct keys that holds every key
of a remembered set of ``n`` keys *is* that set, so a hit is exact, never a guess.

Cost bounds: at most :data:`RECENT` remembered sets per size are tried before the
``frozenset`` path (a sender alternating more key sets of one size pays both); maps
over ``max_keys`` keys or ``max_chars`` characters of keys are not cached at all.
Safe across threads: an entry is read whole and verified before use, and a lost update
only costs a later miss.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
RECENT = 4  # remembered key sets tried per size before the frozenset path


class KeySetCache(Generic[T]):
    """``get(attrs)`` is ``build(attrs)``, computed once per key set (bounded cache)."""

    __slots__ = ("_build", "_by_keys", "_max_chars", "_max_keys", "_recent", "_size")

    def __init__(self, build: Callable[[Any], T], size: int, max_keys: int,
                 max_chars: int | None = None) -> None:
        self._build = build
        self._size, self._max_keys, self._max_chars = size, max_keys, max_chars
        self._by_keys: dict[frozenset[str], T] = {}
        self._recent: dict[int, list[tuple[tuple[str, ...], T]]] = {}

    def get(self, attrs: Any) -> T:
        """The value for ``attrs``' key set (a mapping of distinct string keys)."""
        n = len(attrs)
        if n > self._max_keys:
            return self._build(attrs)  # rare and unbounded in variety: not cached
        recent = self._recent.get(n)
        if recent is not None:
            has = attrs.__contains__
            for known, value in recent:
                if all(map(has, known)):
                    return value
        keys: frozenset[str] = frozenset(attrs)
        found: T | None = self._by_keys.get(keys)
        if found is None:
            if self._max_chars is not None and sum(map(len, keys)) > self._max_chars:
                return self._build(attrs)
            if len(self._by_keys) >= self._size:
                self._by_keys.clear()
                self._recent.clear()
            found = self._by_keys[keys] = self._build(attrs)
        recent = self._recent.setdefault(n, [])
        recent.insert(0, (tuple(keys), found))
        del recent[RECENT:]
        return found

    def clear(self) -> None:
        """Forget every key set (tests)."""
        self._by_keys.clear()
        self._recent.clear()
