"""Length buckets and packed model inputs.

The graph (graph.py) runs its dense layers on packed tokens, so padding costs only attention
work: ``B * S^2`` score entries per head and layer for a group of ``B`` texts padded to ``S``.
:func:`plan_groups` splits texts sorted by length into the groups that minimise a simple cost
model (per-run overhead + dense work per real token + attention work per padded slot); with a
mix of 5- and 250-token texts that keeps a long text from inflating the short ones' attention.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

# Default cost model, in units of "one real token through the dense layers" (12 H^2 MACs
# per layer). Attention costs ~2 S H MACs per padded slot, i.e. S / (6 H) ~ S * 0.0009 dense
# units in theory, but its small per-head products run below peak: ~0.002 measured for fp32.
# A run's fixed overhead (dispatch, ~100 kernels) costs about as much as 15 tokens.
# model.PLAN_COSTS holds the measured values per variant.
RUN_OVERHEAD_TOKENS = 15.0
ATTENTION_FACTOR = 0.002

Feed = dict[str, NDArray[np.generic]]


def plan_groups(lengths: Sequence[int], max_batch: int,
                run_overhead: float = RUN_OVERHEAD_TOKENS,
                attention_factor: float = ATTENTION_FACTOR) -> list[list[int]]:
    """Indices of ``lengths`` grouped into runs: sorted by length, at most ``max_batch`` each.

    The split is the exact minimum of the cost model (dynamic programming over the sorted
    lengths, O(n * max_batch)).
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    n = len(order)
    if n == 0:
        return []
    sorted_len = [lengths[i] for i in order]
    prefix = [0]
    for length in sorted_len:
        prefix.append(prefix[-1] + length)
    # best[j]: cheapest cost for the first j sorted texts; cut[j]: where its last group starts.
    best = [0.0] + [float("inf")] * n
    cut = [0] * (n + 1)
    for j in range(1, n + 1):
        longest = sorted_len[j - 1]
        for i in range(max(0, j - max_batch), j):
            size = j - i
            cost = (best[i] + run_overhead + (prefix[j] - prefix[i])
                    + attention_factor * size * longest * longest)
            if cost < best[j]:
                best[j], cut[j] = cost, i
    groups: list[list[int]] = []
    j = n
    while j > 0:
        groups.append(order[cut[j]:j])
        j = cut[j]
    groups.reverse()
    return groups


def pack(sequences: Sequence[Sequence[int]]) -> Feed:
    """Model inputs for one group of token-id sequences (each already has [CLS] ... [SEP])."""
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    batch, width, total = len(sequences), int(lengths.max()), int(lengths.sum())
    starts = np.zeros(batch, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    input_ids = np.fromiter((t for s in sequences for t in s), dtype=np.int64, count=total)
    owner = np.repeat(np.arange(batch, dtype=np.int64), lengths)     # text of each token
    position = np.arange(total, dtype=np.int64) - starts[owner]        # 0..len-1 per text
    slot = np.arange(width, dtype=np.int64)
    valid = slot[None, :] < lengths[:, None]                            # [B, S]
    # Padded slots gather token 0: their keys are masked and their outputs never read back.
    pad_map = np.where(valid, starts[:, None] + slot[None, :], 0)
    pool = np.zeros((batch, total), dtype=np.float32)
    pool[owner, np.arange(total)] = (1.0 / lengths)[owner]
    return {
        "input_ids": input_ids,
        "position_ids": position,
        "token_index": owner * width + position,
        "pad_map": pad_map,
        "key_mask": valid.astype(np.int32),
        "pool": pool,
    }
