"""The price engine's :class:`Usage` of a span, when the span reports more than the
four counts every door carries (prompt, completion, cache read, cache write).

The detailed counts (reasoning, 1-hour cache writes, audio and image tokens, the service
tier) are read from the span fields of the same names: a span that reports none of them is
priced on the cost step's four-count fast path.
"""

from __future__ import annotations

import operator

from llm_observe.pricing.usage import Usage
from llm_observe.span import DETAIL_COUNTS, LlmSpan

# Usage fields beyond the four counts, under their span field names (LlmSpan's parts of
# the counts, and the service tier); one C call reads them all, the usual span has none.
DETAIL_FIELDS = (*DETAIL_COUNTS, "service_tier")
_READ = operator.attrgetter(*DETAIL_FIELDS)


def span_usage(span: LlmSpan) -> Usage | None:
    """The span's Usage, or None when it reports no detail (the four-count path prices it)."""
    values = _READ(span)
    if not any(values):
        return None
    return Usage(prompt_tokens=span.prompt_tokens, completion_tokens=span.completion_tokens,
                 cache_read_tokens=span.cache_read_tokens,
                 cache_write_tokens=span.cache_write_tokens,
                 **dict(zip(DETAIL_FIELDS, values, strict=True)))
