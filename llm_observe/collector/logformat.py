"""The collector's log lines: plain text for a terminal, or one JSON object per line.

The all-in-one container writes JSON (``LLM_OBSERVE_LOG_FORMAT=json``): Alloy tails it
into Loki, which labels ``level`` and keeps ``trace_id`` as structured metadata; Grafana's
Loki datasource turns ``"trace_id": "<hex>"`` into a link to the trace in Tempo, and the
Tempo datasource's "Logs for this span" finds the lines that carry a trace's id. A log
call about one span passes it as ``extra={"trace_id": ..., "span_id": ...}``.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    """``{"ts", "level", "logger", "message"[, "trace_id", "span_id", "exc"]}`` per line."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, str] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("trace_id", "span_id"):
            value = getattr(record, key, None)
            if isinstance(value, str) and value:
                out[key] = value
        if record.exc_info:
            out["exc"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False)


def configure(level: str, fmt: str) -> None:
    """Root logging for ``serve``: ``fmt`` is "text" or "json" (see FORMATS)."""
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=level.upper(), handlers=[handler], force=True)
