"""``google.rpc.Status`` with RetryInfo: the error body of both OTLP doors.

gRPC sends it serialized in the ``grpc-status-details-bin`` trailer; OTLP/HTTP sends it as
the body of every 4xx/5xx answer, in the request's encoding (opentelemetry-proto
docs/specification.md, "OTLP/HTTP Response", "Failures": ``Status.code`` is optional and
not acted on by clients; throttling answers MAY carry RetryInfo beside ``Retry-After``).
"""

from __future__ import annotations

from google.protobuf import any_pb2, duration_pb2, json_format
from google.rpc import error_details_pb2, status_pb2


def rpc_status(code: int, message: str, retry_after_s: float | None = None) -> status_pb2.Status:
    """A Status with ``code`` (a gRPC code number) and, when given, a RetryInfo detail."""
    status = status_pb2.Status(code=code, message=message)
    if retry_after_s is not None:
        seconds = int(retry_after_s)
        info = error_details_pb2.RetryInfo(retry_delay=duration_pb2.Duration(
            seconds=seconds, nanos=int((retry_after_s - seconds) * 1e9)))
        detail = any_pb2.Any()
        detail.Pack(info)
        status.details.append(detail)
    return status


def status_json(status: status_pb2.Status) -> bytes:
    """The proto3 JSON of a Status (``{"code": 8, "message": ..., "details": [{"@type"...}]}``)."""
    text: str = json_format.MessageToJson(status, indent=None)
    return text.encode()
