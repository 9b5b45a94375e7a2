"""The REST management API (``/v1``) of the collector: ``create_app(collector)``.

Kept import-free on purpose: ``llm_observe.api.events`` (the in-process event hook) must
be importable without the collector extra's aiohttp. Import the app from
``llm_observe.api.app``.
"""
