"""The price table: entries by (model, provider) and model-name resolution.

Loaded from ``config/model_prices.yaml`` by :mod:`llm_observe.pricing`; the entries and
their exact cost arithmetic are in :mod:`.entry` and :mod:`.rates`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from llm_observe.pricing.entry import PriceEntry
from llm_observe.pricing.rates import PRICE_DECIMALS, scale_price
from llm_observe.providers.registry import canonical

__all__ = ["PRICE_DECIMALS", "PriceEntry", "PriceTable", "scale_price", "snapshot_bases"]
# Resolution results are cached per raw (model, provider); a client sending
# endless distinct names must not grow memory without bound.
_CACHE_MAX = 10_000

# Dated snapshot / alias suffixes, tried only when the full name has no entry:
# -latest; OpenAI -2024-08-06; Anthropic -20241022 (Vertex: @20241022);
# Cohere/Gemini-preview -08-2024; Gemini preview -05-20; OpenAI -0613/-0125,
# Mistral -2411, xAI -0709; Gemini -001/-002.
_SNAPSHOT_SUFFIX = re.compile(
    r"(?:-latest|[-@]\d{4}-\d{2}-\d{2}|[-@]\d{8}|-\d{2}-\d{4}|-\d{2}-\d{2}|-\d{3,4})$"
)


def snapshot_bases(name: str) -> list[str]:
    """Names a dated snapshot or alias may resolve to, nearest first."""
    bases: list[str] = []
    current = name
    for _ in range(3):  # e.g. "...-2024-08-06-latest" needs two strips
        stripped = _SNAPSHOT_SUFFIX.sub("", current)
        if stripped == current or not stripped:
            break
        bases.append(stripped)
        current = stripped
    return bases


class PriceTable:
    """Immutable set of price entries with cached (model, provider) resolution.

    Raises ValueError on a duplicate (model, provider); files go through the
    loader, which reports that as a ConfigError naming both entries.
    """

    def __init__(self, entries: Iterable[PriceEntry], source: str = "<memory>",
                 origin: str = "memory") -> None:
        self.entries: tuple[PriceEntry, ...] = tuple(entries)
        self.source = source
        # How the file was chosen: "default" (shipped), "env" ($LLM_OBSERVE_PRICES_FILE),
        # "path" (an explicit path, e.g. the collector's price-file setting) or "memory".
        self.origin = origin
        self._by_key: dict[tuple[str, str], PriceEntry] = {}
        by_model: dict[str, list[PriceEntry]] = {}
        for entry in self.entries:
            key = (entry.model.lower(), canonical(entry.provider))
            if key in self._by_key:
                raise ValueError(f"duplicate (model, provider) {key}")
            self._by_key[key] = entry
            by_model.setdefault(key[0], []).append(entry)
        # Model names priced by exactly one provider can be found without it.
        self._unique = {m: es[0] for m, es in by_model.items() if len(es) == 1}
        self._model_names = frozenset(by_model)
        self.providers = frozenset(p for _, p in self._by_key)
        self._cache: dict[tuple[str, str], PriceEntry | None] = {}

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def models(self) -> frozenset[str]:
        """Lower-cased model names that have at least one entry."""
        return self._model_names

    def lookup(self, model: str, provider: str) -> PriceEntry | None:
        """The entry pricing this model for this provider, or None if unpriced.

        Order: exact (model, provider); the model alone if one provider prices
        it; provider-prefixed names ("openai/gpt-4o"); dated snapshots and
        "-latest" aliases resolved to their base entry. Case-insensitive.
        """
        key = (model, provider)
        try:
            return self._cache[key]
        except KeyError:
            pass
        entry = self._resolve(model, provider)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = entry
        return entry

    def _match(self, name: str, providers: tuple[str, ...]) -> PriceEntry | None:
        for provider in providers:
            entry = self._by_key.get((name, provider))
            if entry is not None:
                return entry
        if any(p in self.providers for p in providers):
            # A host we price has its own prices: Groq's list price is not Together's.
            return None
        return self._unique.get(name)

    def _resolve(self, model: str, provider: str) -> PriceEntry | None:
        name = model.strip().lower()
        prov = canonical(provider)
        candidates: list[tuple[str, tuple[str, ...]]] = [(name, (prov,))]
        rest = name
        while "/" in rest:  # "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo"
            head, rest = rest.split("/", 1)
            hint = canonical(head)
            # A prefix that names a priced provider is a hint, tried before the span's own.
            candidates.append((rest, (hint, prov) if hint in self.providers else (prov,)))
        for cand, provs in candidates:
            found = self._match(cand, provs)
            if found is not None:
                return found
        for cand, provs in candidates:
            for base in snapshot_bases(cand):
                found = self._match(base, provs)
                if found is not None:
                    return found
        return None
