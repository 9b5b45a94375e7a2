"""Finding's hand-written ``__init__`` (scan/findings.py) against the one a dataclass
generates: same fields, defaults, keywords, equality, hash, immutability."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from llm_observe.scan.findings import Finding

# The dataclass Finding would be without its own __init__: the reference.
Reference = dataclasses.make_dataclass(
    "Reference", [(f.name, f.type, f) for f in dataclasses.fields(Finding)],
    frozen=True, slots=True)
CASES: list[tuple[tuple[object, ...], dict[str, object]]] = [
    (("pii", "email", 3, 9), {}),
    (("injection", "instruction_override", 0, 28, "high", "prompt", "phrase"), {}),
    (("injection", "injection_classifier", 0, 200, "high", "prompt", "classifier", 0.97,
      "user", 2), {}),
    (("pii", "ssn"), {"start": 1, "end": 12, "role": "tool", "message": -1}),
    ((), {"type": "pii", "name": "iban", "start": 0, "end": 22, "score": None,
          "field": "completion"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CASES)
def test_same_as_the_generated_init(args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    ours, ref = Finding(*args, **kwargs), Reference(*args, **kwargs)  # type: ignore[arg-type]
    assert dataclasses.astuple(ours) == dataclasses.astuple(ref)
    assert ours == Finding(*args, **kwargs) and hash(ours) == hash(Finding(*args, **kwargs))  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(ours)) == ours == copy.deepcopy(ours)
    assert dataclasses.replace(ours, role="user").role == "user"
    with pytest.raises(dataclasses.FrozenInstanceError):
        ours.start = 5  # type: ignore[misc]


def test_arguments_checked_as_the_generated_init() -> None:
    with pytest.raises(TypeError):
        Finding("pii", "email", 1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Finding("pii", "email", 1, 2, colour="red")  # type: ignore[call-arg]
