"""Where traces go: ``destinations.yaml`` in the config directory, or ``tempo_endpoint``.

The file is a list of entries (docs/forwarding.md)::

    - name: phoenix                      # [a-z0-9_-], unique: metrics label, spool folder
      endpoint: http://127.0.0.1:6006    # OTLP/HTTP: /v1/traces unless a path is given
      protocol: http/protobuf            # grpc | http/protobuf
      headers: {x-api-key: "${PHOENIX_KEY}"}   # ${VAR}: from the environment
      basic_auth: {username: pk, password: "${SECRET}"}  # Authorization: Basic ...
      compression: gzip                  # none | gzip
      tls: {ca_file: ca.pem, cert_file: c.pem, key_file: k.pem, insecure: false}
      timeout_s: 10
      text: redacted                     # redacted | full | none
      spans: all                         # all | llm | sampled

It is read and checked whole at start-up: an unknown or duplicate key, a duplicate name or
a bad value stops start-up with one line naming the file and the entry
(:class:`~llm_observe.errors.ConfigError`). ``tempo_endpoint``, when set, is one more
destination, ``tempo`` (gRPC; redacted unless ``redact_pii`` is off), whose spool is
``spool_dir`` itself as before; a file's destination spools in ``spool_dir/<name>``.
"""

from __future__ import annotations

import base64
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from llm_observe.collector.exporters.otlp_forwarder.transport import Tls
from llm_observe.collector.settings import Settings
from llm_observe.errors import ConfigError
from llm_observe.otlp.policy import SPAN_FILTERS, TEXT_POLICIES

FILE = "destinations.yaml"
PROTOCOLS = ("grpc", "http/protobuf")
KEYS = frozenset({"name", "endpoint", "protocol", "headers", "basic_auth", "compression",
                  "tls", "timeout_s", "text", "spans"})
TLS_KEYS = frozenset({"ca_file", "cert_file", "key_file", "insecure"})
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}\Z")
HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+\Z")  # an HTTP token (RFC 9110)
VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True, slots=True)
class Destination:
    """One checked entry. ``endpoint`` is the gRPC target or the full OTLP/HTTP URL."""

    name: str
    endpoint: str
    protocol: str = "grpc"
    headers: tuple[tuple[str, str], ...] = ()
    compression: str = "none"
    tls: Tls | None = None
    timeout_s: float = 10.0
    text: str = "redacted"
    spans: str = "all"
    spool_subdir: bool = field(default=True)  # False: spool_dir itself (tempo_endpoint)


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise ConfigError("", f"line {key_node.start_mark.line + 1}",
                                  f"duplicate key {key!r}")
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def destinations(settings: Settings, environ: dict[str, str] | None = None) -> list[Destination]:
    """Every destination ``settings`` ask for, checked (ConfigError on the first bad one)."""
    env = dict(os.environ if environ is None else environ)
    found: list[Destination] = []
    if settings.tempo_endpoint:
        found.append(Destination("tempo", settings.tempo_endpoint,
                                 text="redacted" if settings.redact_pii else "full",
                                 spool_subdir=False))
    path = settings.config_file(FILE)
    if path is not None and Path(path).is_file():
        found.extend(load(path, env, taken={d.name for d in found}))
    return found


def load(path: str | os.PathLike[str], environ: dict[str, str],
         taken: set[str] | None = None) -> list[Destination]:
    """The destinations of one file (see the module docstring)."""
    try:
        data = yaml.load(Path(path).read_text(encoding="utf-8"), Loader=_StrictLoader)
    except ConfigError as exc:
        raise ConfigError(path, exc.entry, exc.message) from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(path, "file", f"cannot be read as YAML: {exc}".replace("\n", " ")) \
            from None
    if data is None:
        return []
    if not isinstance(data, list):
        raise ConfigError(path, "file", "must be a list of destinations (- name: ...)")
    names = set(taken or ())
    out = []
    for i, entry in enumerate(data):
        label = f"entry {i + 1}"
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            label += f" ({entry['name']})"
        try:
            destination = _entry(entry, environ)
        except ValueError as exc:
            raise ConfigError(path, label, str(exc)) from None
        if destination.name in names:
            raise ConfigError(path, label, f"duplicate name {destination.name!r}"
                              + (" (tempo_endpoint is the destination 'tempo')"
                                 if destination.name == "tempo" else ""))
        names.add(destination.name)
        out.append(destination)
    return out


def _entry(entry: Any, env: dict[str, str]) -> Destination:
    if not isinstance(entry, dict):
        raise ValueError("must be a mapping (name: ..., endpoint: ...)")
    unknown = sorted(set(map(str, entry)) - KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} (known: {', '.join(sorted(KEYS))})")
    name = _required(entry, "name")
    if not NAME.match(name) or name.startswith("worker-"):
        raise ValueError(f"name {name!r} must be 1-63 of a-z, 0-9, '_', '-' (a label and "
                         "a folder name), not worker-* (serve --workers' spool folders)")
    protocol = _choice(entry, "protocol", PROTOCOLS, None)
    endpoint = _endpoint(_required(entry, "endpoint"), protocol)
    headers = [(_header_name(k), _expand(str(v), env, f"headers.{k}"))
               for k, v in _mapping(entry, "headers").items()]
    auth = _mapping(entry, "basic_auth")
    if auth:
        if set(auth) != {"username", "password"}:
            raise ValueError("basic_auth needs exactly username and password")
        pair = ":".join(_expand(str(auth[k]), env, f"basic_auth.{k}")
                        for k in ("username", "password"))
        headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode()))
    if len({k.lower() for k, _ in headers}) != len(headers):
        raise ValueError("a header is given twice (basic_auth sets Authorization)")
    timeout = entry.get("timeout_s", 10.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 600:
        raise ValueError(f"timeout_s must be a number of seconds in (0, 600], got {timeout!r}")
    return Destination(name, endpoint, protocol, tuple(headers),
                       _choice(entry, "compression", ("none", "gzip"), "none"),
                       _tls(_mapping(entry, "tls"), protocol), float(timeout),
                       _choice(entry, "text", TEXT_POLICIES, "redacted"),
                       _choice(entry, "spans", SPAN_FILTERS, "all"))


def _required(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} is required (a string)")
    return value.strip()


def _choice(entry: dict[str, Any], key: str, allowed: tuple[str, ...],
            default: str | None) -> str:
    value = entry.get(key, default)
    if value not in allowed:
        raise ValueError(f"{key} must be one of {', '.join(allowed)}, got {value!r}")
    return str(value)


def _mapping(entry: dict[str, Any], key: str) -> dict[str, Any]:
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise ValueError(f"{key} must be a mapping")
    return value


def _endpoint(endpoint: str, protocol: str) -> str:
    if protocol == "grpc":
        if not re.match(r"(https?://)?[^/\s]+:\d{1,5}/?\Z", endpoint):
            raise ValueError(f"endpoint {endpoint!r}: gRPC takes host:port, http://host:port "
                             "or https://host:port")
        return endpoint
    url = urlsplit(endpoint)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"endpoint {endpoint!r}: OTLP/HTTP takes http(s)://host[:port][/path]")
    try:
        url.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"endpoint {endpoint!r}: bad port") from None
    if url.path in ("", "/"):
        return endpoint.rstrip("/") + "/v1/traces"
    return endpoint


def _header_name(key: Any) -> str:
    if not isinstance(key, str) or not HEADER.match(key):
        raise ValueError(f"header name {key!r} is not an HTTP token")
    return key


def _expand(value: str, env: dict[str, str], where: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1) not in env:
            raise ValueError(f"{where}: ${{{match.group(1)}}} is not set in the environment")
        return env[match.group(1)]
    out = VAR.sub(one, value)
    if any(c in out for c in "\r\n\0"):
        raise ValueError(f"{where}: a header value cannot hold CR, LF or NUL")
    return out


def _tls(tls: dict[str, Any], protocol: str) -> Tls | None:
    if not tls:
        return None
    unknown = sorted(set(map(str, tls)) - TLS_KEYS)
    if unknown:
        raise ValueError(f"unknown key 'tls.{unknown[0]}' (known: {', '.join(sorted(TLS_KEYS))})")
    for key in ("ca_file", "cert_file", "key_file"):
        if tls.get(key) is not None and not Path(str(tls[key])).is_file():
            raise ValueError(f"tls.{key}: {tls[key]!r} is not a file")
    if bool(tls.get("cert_file")) != bool(tls.get("key_file")):
        raise ValueError("tls.cert_file and tls.key_file go together")
    insecure = tls.get("insecure", False)
    if not isinstance(insecure, bool) or (insecure and protocol == "grpc"):
        raise ValueError("tls.insecure must be true or false (OTLP/HTTP only)")
    ca, cert, private = (str(tls[k]) if tls.get(k) else None
                     for k in ("ca_file", "cert_file", "key_file"))
    return Tls(ca, cert, private, insecure)
