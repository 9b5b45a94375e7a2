"""The pause after a failed spool write: short, growing while writes fail, ended by room."""

from __future__ import annotations

import time

import pytest

from llm_observe.collector.exporters.otlp_forwarder.probe import FIRST_S, MAX_S, SpaceProbe


def test_the_pause_grows_to_its_cap_and_room_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    probe = SpaceProbe()
    assert probe.usable()
    pauses = [probe.failed() for _ in range(6)]
    assert pauses == [FIRST_S, 0.2, 0.4, 0.8, MAX_S, MAX_S]
    assert not probe.usable()
    now[0] += MAX_S
    assert probe.usable()  # a full disk is tried again once a MAX_S at most
    probe.failed()
    probe.succeeded()  # a write went through, or a delivered file was deleted
    assert probe.usable() and probe.failed() == FIRST_S
