"""The MCP Python SDK's client and server calls, traced by the SDK itself (mcp >= 2).

mcp 2.x emits OpenTelemetry spans of its own (``mcp/shared/_otel.py``): a CLIENT span
``MCP send <method> [<tool>]`` per request with ``mcp.method.name``, and a SERVER span per
handled request (``tools/call <tool>`` with ``gen_ai.tool.name`` and ``error.type`` =
``tool_error`` for a result with ``isError``), on the tracer ``mcp-python-sdk`` of the
*global* provider. This target, switched on by ``init_auto_instrumentation()`` when ``mcp``
is installed, sends those spans where llm-observe's go (``use_tracer_provider`` included)
and names the tool on the client's ``tools/call`` span (``gen_ai.tool.name``, which the SDK
puts only in the span name), so any backend can group by tool. The SDK's module-level tracer
is swapped for a forwarding one; ``unpatch`` puts the original back. Spans are never
duplicated: the SDK still makes them, we only choose where they go.

``opentelemetry-instrumentation-mcp`` (OpenLLMetry 0.62.4) is not used: it fails on import
with mcp 2.3 (``PathResolutionError`` on ``streamablehttp_client``). mcp 1.x has no
OpenTelemetry support and is not traced here (status "patched" only once ``mcp.shared._otel``
is imported, i.e. never on 1.x: "waiting for import").
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

import wrapt

from llm_observe.instrument.tracing import scoped_tracer

MODULE = "mcp.shared._otel"
SCOPE = "mcp-python-sdk"
_CALL_PREFIX = "MCP send tools/call "


class _Forwarding:
    """The SDK's ``_tracer``: each span on llm-observe's provider, the tool named."""

    def start_as_current_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        attributes = kwargs.get("attributes")
        if (name.startswith(_CALL_PREFIX) and isinstance(attributes, dict)
                and "gen_ai.tool.name" not in attributes):
            kwargs["attributes"] = {**attributes, "gen_ai.tool.name": name[len(_CALL_PREFIX):]}
        return scoped_tracer(SCOPE).start_as_current_span(name, *args, **kwargs)

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return scoped_tracer(SCOPE).start_span(name, *args, **kwargs)


class McpPatcher:
    """The Patcher (instrument.patching) of the MCP SDK's tracer."""

    name = "mcp"

    def __init__(self) -> None:
        self._saved: tuple[ModuleType, Any] | None = None
        self._wanted = False
        self._hooked = False
        self._lock = threading.RLock()

    @property
    def patched(self) -> bool:
        return self._saved is not None

    def available(self) -> bool:
        try:
            return importlib.util.find_spec("mcp") is not None
        except (ImportError, ValueError):
            return False

    def patch(self) -> None:
        with self._lock:
            self._wanted = True
            if MODULE in sys.modules:
                self._apply(sys.modules[MODULE])
            elif not self._hooked:
                self._hooked = True
                wrapt.register_post_import_hook(self._on_import, MODULE)

    def _on_import(self, module: ModuleType) -> None:
        with self._lock:
            if self._wanted:
                self._apply(module)

    def _apply(self, module: ModuleType) -> None:
        if self._saved is None and hasattr(module, "_tracer"):
            self._saved = (module, getattr(module, "_tracer"))  # noqa: B009
            setattr(module, "_tracer", _Forwarding())  # noqa: B010 (a module global)

    def unpatch(self) -> None:
        with self._lock:
            self._wanted = False
            if self._saved is not None:
                module, original = self._saved
                setattr(module, "_tracer", original)  # noqa: B010
                self._saved = None


PATCHER = McpPatcher()
