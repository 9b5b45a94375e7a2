"""A bounded cache of scan results by exact text, for text that real traffic repeats.

An app sends the same system prompt (often 2-10k characters) and the same conversation
history on every call of a conversation; scanning them again is work done before. The
role scanner (scan/messages.py) scans a call's text message run by message run, so a run
seen before, under the same rule, is answered from here. What is cached is the scanner's
own result for that run (:class:`~llm_observe.scan.findings.ScanResult`, offsets into the
run): a pure function of the run's text and of the rule (field label, the role and message
stamped on its findings, injection looked for or not, every occurrence or the verdict, the
classifier and its threshold), so a hit
gives exactly the findings a scan would (tests/scan/test_scan_cache.py compares both).

Contract:

- keyed by a 16-byte BLAKE2b digest of the text (UTF-8, lone surrogates kept) and the
  rule: the cache holds no text, only digests and findings (which carry no matched
  text either, scan/findings.py);
- only texts of at least ``min_chars`` characters are looked up: below that a scan costs
  a few µs and a miss would add its hashing to every call (the bench's ~200-character
  texts never reach it);
- bounded in entries and in bytes (an estimate of each entry's size: a fixed part plus
  its findings), least recently used evicted first; a result larger than the byte bound
  on its own is not kept;
- thread-safe (one lock; the scan itself runs outside it, so two threads may scan the
  same new text at once and both store the same result).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from hashlib import blake2b

from llm_observe.scan.findings import ScanResult

DEFAULT_ENTRIES = 4096
DEFAULT_BYTES = 8 * 1024 * 1024
DEFAULT_MIN_CHARS = 512
# Estimated bytes of an entry (digest, key tuple, OrderedDict node, ScanResult) and of
# each finding it holds (a slotted Finding and its tuple slot).
ENTRY_BYTES = 320
FINDING_BYTES = 136

Key = tuple[bytes, Hashable]


class ScanCache:
    """LRU of :class:`ScanResult` by (text digest, rule); see the module's contract."""

    def __init__(self, max_entries: int = DEFAULT_ENTRIES, max_bytes: int = DEFAULT_BYTES,
                 min_chars: int = DEFAULT_MIN_CHARS) -> None:
        if max_entries < 1 or max_bytes < ENTRY_BYTES or min_chars < 1:
            raise ValueError("scan cache: max_entries >= 1, max_bytes >= "
                             f"{ENTRY_BYTES} and min_chars >= 1 are required")
        self.max_entries, self.max_bytes, self.min_chars = max_entries, max_bytes, min_chars
        self._items: OrderedDict[Key, tuple[ScanResult, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = self.misses = self.evictions = 0

    def __len__(self) -> int:
        return len(self._items)

    def scan(self, text: str, rule: Hashable, run: Callable[[str], ScanResult]) -> ScanResult:
        """``run(text)``, answered from the cache when ``text`` was scanned under ``rule``
        before; ``rule`` must name everything besides the text the result depends on."""
        if len(text) < self.min_chars:
            return run(text)
        key = (blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest(), rule)
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found[0]
            self.misses += 1
        result = run(text)
        self._put(key, result)
        return result

    def _put(self, key: Key, result: ScanResult) -> None:
        size = ENTRY_BYTES + FINDING_BYTES * len(result.findings)
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self.bytes -= old[1]
            self._items[key] = (result, size)
            self.bytes += size
            while len(self._items) > self.max_entries or self.bytes > self.max_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self.bytes -= dropped
                self.evictions += 1
