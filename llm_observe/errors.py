"""Domain errors shared by every stage.

Errors say whether to retry (after the collector's ``consumererror.Permanent``):
a :class:`PermanentError` maps to gRPC INVALID_ARGUMENT / HTTP 4xx, anything
else is retryable (UNAVAILABLE / 503).
"""

from __future__ import annotations

from dataclasses import dataclass


class LlmObserveError(Exception):
    """Base of every error this package raises on purpose."""


class PermanentError(LlmObserveError):
    """The input is wrong; sending it again cannot succeed."""


class RetryableError(LlmObserveError):
    """A transient condition (queue full, backend down); the caller may retry."""


class ConfigError(LlmObserveError):
    """A configuration file is malformed; start-up stops with this one line."""

    def __init__(self, path: object, entry: str, message: str) -> None:
        self.path = str(path)
        self.entry = entry
        self.message = message
        super().__init__(f"{self.path}: {entry}: {message}")


@dataclass(frozen=True, slots=True)
class FieldError:
    """One bad field of an input record."""

    field: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


class SpanValidationError(PermanentError):
    """A span record has one or more bad fields; every one of them is named."""

    def __init__(self, errors: list[FieldError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e.field}: {e.message}" for e in errors))
