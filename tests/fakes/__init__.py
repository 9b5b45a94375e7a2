"""Shared fakes for the tests: a fake LLM provider server (``tests.fakes.provider``)."""

from __future__ import annotations

from tests.fakes.provider import FakeProvider, Recorded, Settings

__all__ = ["FakeProvider", "Recorded", "Settings"]
