"""OTLP/HTTP answers: an :class:`~receiver.export.Outcome` as an HTTP response.

Per opentelemetry-proto docs/specification.md, "OTLP/HTTP Response": the body is in the
request's encoding (``application/x-protobuf`` or ``application/json``); success is 200
with an ``ExportTraceServiceResponse`` (``partial_success`` set only when spans were
rejected); every 4xx/5xx carries a ``google.rpc.Status``. Status codes:

==================  ====  ==========================================================
outcome             HTTP  why
==================  ====  ==========================================================
ok / partial        200   the client must not retry a partial success
invalid             400   "Bad Data": permanent, not retried
unauthenticated     401   not retried (WWW-Authenticate: Bearer)
too large           413   the spec's "Content Too Large" for the size limit
backpressure        429   retryable, with Retry-After and RetryInfo; the OTel Collector
                          maps RESOURCE_EXHAUSTED (our gRPC answer) to 429 as well
unavailable         503   retryable, with Retry-After
==================  ====  ==========================================================
"""

from __future__ import annotations

import math
from typing import Any

from aiohttp import web
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceResponse,
)

from llm_observe.receiver.export import Kind, Outcome
from llm_observe.receiver.status import rpc_status, status_json

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CONTENT_TYPES = (PROTOBUF, JSON)

# outcome -> (HTTP status, google.rpc.Code for Status.code)
_STATUS = {Kind.INVALID: (400, code_pb2.INVALID_ARGUMENT),
           Kind.UNAUTHENTICATED: (401, code_pb2.UNAUTHENTICATED),
           Kind.TOO_LARGE: (413, code_pb2.RESOURCE_EXHAUSTED),
           Kind.BACKPRESSURE: (429, code_pb2.RESOURCE_EXHAUSTED),
           Kind.UNAVAILABLE: (503, code_pb2.UNAVAILABLE)}
# HTTP statuses raised by the router or aiohttp itself -> google.rpc.Code
_HTTP_CODES = {400: code_pb2.INVALID_ARGUMENT, 404: code_pb2.NOT_FOUND,
               405: code_pb2.UNIMPLEMENTED, 413: code_pb2.RESOURCE_EXHAUSTED,
               415: code_pb2.INVALID_ARGUMENT}


def wants_json(request: web.Request) -> bool:
    """Whether to answer in JSON: the request was JSON, or is of a type we do not speak
    (a human with curl reads JSON; a protobuf client never sends another type)."""
    return request.content_type != PROTOBUF


def message_response(message: Message, as_json: bool, status: int = 200,
                     headers: dict[str, str] | None = None) -> web.Response:
    """``message`` in the requested encoding, with the matching Content-Type."""
    if as_json:
        text: str = json_format.MessageToJson(message, indent=None)
        body = text.encode()
    else:
        body = message.SerializeToString()
    return web.Response(status=status, body=body, content_type=JSON if as_json else PROTOBUF,
                        headers=headers)


def error_response(status: int, code: int, message: str, as_json: bool,
                   retry_after_s: float | None = None) -> web.Response:
    """A 4xx/5xx answer: a google.rpc.Status body; Retry-After (whole seconds, at least 1,
    RFC 9110 delay-seconds) and a RetryInfo detail when the sender should come back."""
    headers = {}
    if retry_after_s is not None:
        headers["Retry-After"] = str(max(1, math.ceil(retry_after_s)))
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="otlp"'
    rpc = rpc_status(code, message, retry_after_s)
    if as_json:
        return web.Response(status=status, body=status_json(rpc), content_type=JSON,
                            headers=headers)
    return web.Response(status=status, body=rpc.SerializeToString(), content_type=PROTOBUF,
                        headers=headers)


def http_error(status: int, message: str, as_json: bool) -> web.Response:
    """An answer aiohttp or the router chose (404, 405, 413, ...), as a Status body."""
    return error_response(status, _HTTP_CODES.get(status, code_pb2.UNKNOWN), message, as_json)


def trace_answer(outcome: Outcome, as_json: bool) -> web.Response:
    """The answer to a trace Export."""
    if outcome.kind is Kind.OK:
        response = ExportTraceServiceResponse()
        if outcome.rejected:
            response.partial_success.CopyFrom(ExportTracePartialSuccess(
                rejected_spans=outcome.rejected, error_message=outcome.message))
        return message_response(response, as_json)
    status, code = _STATUS[outcome.kind]
    retry: Any = outcome.retry_after_s if outcome.retryable else None
    return error_response(status, code, outcome.message, as_json, retry)
