"""OpenAI SDK (1.x-2.x): ``chat.completions.create``, sync and async, streaming or not.

``chat.completions.stream()`` and ``.parse()`` reach ``create`` or the HTTP layer, so
they are covered too. The provider follows the client's base URL (Azure, Groq, ...).
"""

from __future__ import annotations

from llm_observe.instrument.calls import CallSpec, async_wrapper, sync_wrapper
from llm_observe.instrument.extract import openai as extract
from llm_observe.instrument.patching import TablePatcher, Wrap
from llm_observe.instrument.targets._base_url import provider_of

SPEC = CallSpec(
    provider=lambda resource: provider_of(resource, "openai"),
    request=lambda _resource, args, kwargs: extract.request(args, kwargs),
    response=extract.response,
    accumulator=extract.ChunkAccumulator,
)

# openai >= 1.55 moved the resource into a package; older releases have the module.
_MODULES = ("openai.resources.chat.completions.completions", "openai.resources.chat.completions")

PATCHER = TablePatcher("openai", "openai", [
    entry
    for module in _MODULES
    for entry in (
        Wrap(module, "Completions", "create", sync_wrapper(SPEC), optional=True),
        Wrap(module, "AsyncCompletions", "create", async_wrapper(SPEC), optional=True),
    )
])
