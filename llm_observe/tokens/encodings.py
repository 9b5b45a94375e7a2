"""tiktoken encodings loaded from local files only — never from the network.

tiktoken fetches its BPE files from a blob store at first use and caches them
under ``TIKTOKEN_CACHE_DIR`` in files named by the SHA-1 of the blob URL
(``tiktoken/load.py: read_file_cached``). That fails on air-gapped hosts. The
``litellm`` wheel ships those cache files in ``litellm/litellm_core_utils/
tokenizers`` (o200k_base, cl100k_base, p50k_base), so we read them from there —
found with ``importlib.util.find_spec`` so litellm itself (slow to import, and
it overwrites ``TIKTOKEN_CACHE_DIR`` for the whole process) is never imported,
and without touching any environment variable of the host app.

Every candidate file is checked against the SHA-256 tiktoken itself expects
(``tiktoken_ext/openai_public.py``); a file that does not match is skipped.
"""

from __future__ import annotations

import binascii
import hashlib
import importlib.util
import logging
import os
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import tiktoken

log = logging.getLogger(__name__)

_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"
_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# Constructor parameters copied from tiktoken_ext/openai_public.py (tiktoken
# 0.14). tests/tokens/test_encodings.py checks them against tiktoken's own
# registry so a drift would be caught.
_R50K_PAT = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
_CL100K_PAT = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)


@dataclass(frozen=True, slots=True)
class EncodingSpec:
    """What tiktoken needs to build one encoding, and where its BPE file comes from."""

    name: str
    blob: str
    sha256: str
    pat_str: str
    special_tokens: dict[str, int]
    explicit_n_vocab: int | None = None

    @property
    def url(self) -> str:
        return _BLOB + self.blob

    @property
    def cache_key(self) -> str:
        """File name tiktoken uses in its cache dir: SHA-1 of the blob URL."""
        return hashlib.sha1(self.url.encode()).hexdigest()


SPECS: dict[str, EncodingSpec] = {
    spec.name: spec
    for spec in (
        EncodingSpec(
            "o200k_base", "o200k_base.tiktoken",
            "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
            _O200K_PAT, {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
        ),
        EncodingSpec(
            "cl100k_base", "cl100k_base.tiktoken",
            "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
            _CL100K_PAT,
            {_ENDOFTEXT: 100257, _FIM_PREFIX: 100258, _FIM_MIDDLE: 100259,
             _FIM_SUFFIX: 100260, _ENDOFPROMPT: 100276},
        ),
        EncodingSpec(
            "p50k_base", "p50k_base.tiktoken",
            "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
            _R50K_PAT, {_ENDOFTEXT: 50256}, explicit_n_vocab=50281,
        ),
        EncodingSpec(
            "r50k_base", "r50k_base.tiktoken",
            "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
            _R50K_PAT, {_ENDOFTEXT: 50256}, explicit_n_vocab=50257,
        ),
    )
}


def default_search_dirs() -> list[Path]:
    """Where BPE files are looked for, in order: tiktoken's own cache locations
    (read, never written), then the copy bundled in the litellm wheel."""
    dirs: list[Path] = []
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        value = os.environ.get(var)
        if value:
            dirs.append(Path(value))
    dirs.append(Path(tempfile.gettempdir()) / "data-gym-cache")
    bundled = _litellm_tokenizers_dir()
    if bundled is not None:
        dirs.append(bundled)
    return dirs


def _litellm_tokenizers_dir() -> Path | None:
    # find_spec on the top-level package locates it without executing its
    # __init__ (which imports half of litellm and sets TIKTOKEN_CACHE_DIR).
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "litellm_core_utils" / "tokenizers"
        if candidate.is_dir():
            return candidate
    return None


def parse_bpe(data: bytes) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file: one ``<base64 token> <rank>`` per line."""
    ranks: dict[bytes, int] = {}
    a2b = binascii.a2b_base64
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            ranks[a2b(token)] = int(rank)
    return ranks


class EncodingStore:
    """Loads and caches encodings from local files; thread-safe, loads each once.

    ``get(name)`` returns None (and logs one warning per encoding) when no
    local file with the right hash exists — callers then fall back to the
    character heuristic.
    """

    def __init__(self, search_dirs: Sequence[Path] | None = None) -> None:
        self._dirs = list(search_dirs) if search_dirs is not None else None
        self._cache: dict[str, tiktoken.Encoding | None] = {}
        self._lock = threading.Lock()

    @property
    def search_dirs(self) -> list[Path]:
        if self._dirs is None:
            self._dirs = default_search_dirs()
        return list(self._dirs)

    def get(self, name: str) -> tiktoken.Encoding | None:
        """The encoding called ``name``, or None if it cannot be loaded offline."""
        try:
            return self._cache[name]
        except KeyError:
            pass
        with self._lock:
            if name not in self._cache:
                self._cache[name] = self._load(name)
            return self._cache[name]

    def _load(self, name: str) -> tiktoken.Encoding | None:
        spec = SPECS.get(name)
        if spec is None:
            return None
        found = self._find(spec)
        if found is None:
            log.warning(
                "no local %s file (looked in %s); token counts for its models use the "
                "character heuristic. Install llm-observe[tokens] to count exactly offline.",
                name, ", ".join(str(d) for d in self.search_dirs),
            )
            return None
        ranks = parse_bpe(found[1])
        return tiktoken.Encoding(
            name, pat_str=spec.pat_str, mergeable_ranks=ranks,
            special_tokens=spec.special_tokens, explicit_n_vocab=spec.explicit_n_vocab,
        )

    def find_file(self, spec: EncodingSpec) -> Path | None:
        """First file in the search dirs whose SHA-256 matches ``spec``."""
        found = self._find(spec)
        return None if found is None else found[0]

    def _find(self, spec: EncodingSpec) -> tuple[Path, bytes] | None:
        for directory in self.search_dirs:
            for file_name in (spec.cache_key, spec.blob):
                path = directory / file_name
                try:
                    data = path.read_bytes()
                except OSError:
                    continue
                if hashlib.sha256(data).hexdigest() == spec.sha256:
                    return path, data
                log.warning("ignoring %s: its SHA-256 is not the published %s hash",
                            path, spec.name)
        return None
