"""destinations.yaml: what a user writes, what start-up makes of it, and the one line a
bad entry stops start-up with (file and entry named)."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from llm_observe.collector.exporters.otlp_forwarder import forwarder_from_settings
from llm_observe.collector.exporters.otlp_forwarder.destinations import destinations, load
from llm_observe.collector.exporters.otlp_forwarder.fanout import Fanout
from llm_observe.collector.exporters.otlp_forwarder.forwarder import OtlpForwarder
from llm_observe.collector.settings import Settings
from llm_observe.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "destinations.yaml"
    path.write_text(text)
    return path


def test_an_entry_of_each_kind_reads_as_written(tmp_path: Path) -> None:
    path = write(tmp_path, """
- name: langfuse
  endpoint: https://cloud.example/api/public/otel/v1/traces
  protocol: http/protobuf
  basic_auth: {username: "${PK}", password: "${SK}"}
  compression: gzip
  timeout_s: 5
  text: none
  spans: llm
- name: phoenix
  endpoint: http://127.0.0.1:6006
  protocol: http/protobuf
  text: full
- name: tempo-grpc
  endpoint: 127.0.0.1:4317
  protocol: grpc
  headers: {X-Scope-OrgID: team-a}
""")
    langfuse, phoenix, tempo = load(path, {"PK": "pk-lf-1", "SK": "sk-lf-2"})
    assert langfuse.headers == (("Authorization", "Basic "
                                 + base64.b64encode(b"pk-lf-1:sk-lf-2").decode()),)
    assert (langfuse.compression, langfuse.timeout_s, langfuse.text, langfuse.spans) == (
        "gzip", 5.0, "none", "llm")
    assert langfuse.endpoint.endswith("/api/public/otel/v1/traces")  # a given path is kept
    assert phoenix.endpoint == "http://127.0.0.1:6006/v1/traces"  # /v1/traces implied
    assert (phoenix.text, phoenix.spans) == ("full", "all")
    assert tempo.headers == (("X-Scope-OrgID", "team-a"),) and tempo.text == "redacted"


@pytest.mark.parametrize(("text", "entry", "says"), [
    ("- {name: a, endpoint: 'h:1', protocol: grpc}\n- {name: a, endpoint: 'h:2', protocol: grpc}",
     "entry 2 (a)", "duplicate name 'a'"),
    ("- {name: a, endpoint: 'h:1', protocol: grpc, txt: full}", "entry 1 (a)",
     "unknown key 'txt'"),
    ("- name: a\n  endpoint: 'h:1'\n  protocol: grpc\n  protocol: http/protobuf\n", "line 4",
     "duplicate key 'protocol'"),
    ("- {name: a, endpoint: 'h:1', protocol: grpc, tls: {ca: x}}", "entry 1 (a)",
     "unknown key 'tls.ca'"),
    ("- {name: a, endpoint: 'h:1', protocol: http}", "entry 1 (a)",
     "protocol must be one of grpc, http/protobuf"),
    ("- {name: a, endpoint: 'h:1', protocol: grpc, text: raw}", "entry 1 (a)",
     "text must be one of redacted, full, none"),
    ("- {name: a, endpoint: 'h:1', protocol: grpc, spans: some}", "entry 1 (a)",
     "spans must be one of all, llm, sampled"),
    ("- {name: a, endpoint: 'h:1', protocol: grpc, timeout_s: 0}", "entry 1 (a)",
     "timeout_s must be a number"),
    ("- {name: a, endpoint: 'localhost:4318', protocol: http/protobuf}", "entry 1 (a)",
     "OTLP/HTTP takes http(s)://"),
    ("- {name: a, endpoint: 'http://h:1/v1/traces', protocol: grpc}", "entry 1 (a)",
     "gRPC takes host:port"),
    ("- {name: A/B, endpoint: 'h:1', protocol: grpc}", "entry 1 (A/B)", "must be 1-63 of"),
    ("- {name: worker-1, endpoint: 'h:1', protocol: grpc}", "entry 1 (worker-1)", "not worker-*"),
    ("- {name: a, endpoint: 'h:1', protocol: grpc, headers: {k: '${NOPE}'}}", "entry 1 (a)",
     "${NOPE} is not set"),
    ("- {name: a, endpoint: 'h:1', protocol: grpc, tls: {insecure: true}}", "entry 1 (a)",
     "OTLP/HTTP only"),
    ("- {name: a, protocol: grpc}", "entry 1 (a)", "endpoint is required"),
    ("name: a", "file", "must be a list"),
    ("- [a, b", "file", "cannot be read as YAML"),
])
def test_a_bad_file_names_the_file_and_the_entry(tmp_path: Path, text: str, entry: str,
                                                 says: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load(path, {})
    line = str(caught.value)
    assert line.startswith(f"{path}: {entry}: ") and says in line and "\n" not in line


def test_tempo_endpoint_is_the_one_destination_case(tmp_path: Path) -> None:
    settings = Settings(tempo_endpoint="127.0.0.1:4319", spool_dir=str(tmp_path),
                        redact_pii=False)
    (tempo,) = destinations(settings, {})
    assert (tempo.name, tempo.protocol, tempo.text) == ("tempo", "grpc", "full")
    fwd = forwarder_from_settings(settings, CollectorRegistry(), environ={})
    assert isinstance(fwd, OtlpForwarder) and fwd.spool is not None
    assert fwd.spool.directory == tmp_path  # the spool it always had: nothing left behind
    fwd.spool.close()


def test_tempo_endpoint_and_the_file_together_make_a_fanout(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.mkdir()
    write(config, "- {name: phoenix, endpoint: 'http://127.0.0.1:6006', "
                  "protocol: http/protobuf}\n")
    settings = Settings(tempo_endpoint="127.0.0.1:4319", config_dir=str(config),
                        spool_dir=str(tmp_path / "spool"))
    fan = forwarder_from_settings(settings, CollectorRegistry(), environ={})
    assert isinstance(fan, Fanout)
    assert [(f.destination, f.spool.directory.name) for f in fan.forwarders  # type: ignore[union-attr]
            ] == [("tempo", "spool"), ("phoenix", "phoenix")]
    for f in fan.forwarders:
        assert f.spool is not None
        f.spool.close()
    write(config, "- {name: tempo, endpoint: 'h:1', protocol: grpc}\n")
    with pytest.raises(ConfigError, match="tempo_endpoint is the destination 'tempo'"):
        destinations(settings, {})


def test_serve_stops_at_start_with_one_line(tmp_path: Path) -> None:
    write(tmp_path, "- {name: a, endpoint: 'h:1', protocol: grpc}\n"
                    "- {name: a, endpoint: 'h:2', protocol: grpc}\n")
    done = subprocess.run([sys.executable, "-m", "llm_observe.cli", "serve", "--config-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path.cwd())})
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "destinations.yaml: entry 2 (a): duplicate name 'a'" in lines[0]


def test_the_container_forwards_to_its_tempo_and_to_the_mounted_file(tmp_path: Path) -> None:
    """The container's rendered settings (built-in Tempo, spool on the data volume) plus a
    destinations.yaml in the mounted config directory: both get every span."""
    from tests.provisioning.test_render import _env, run_render

    out, data = tmp_path / "prov", tmp_path / "data"
    assert run_render("--out", str(out), "--profile", "container", "--data-dir", str(data)) == 0
    config = tmp_path / "config"
    config.mkdir()
    write(config, "- {name: langfuse, endpoint: 'https://lf.example/api/public/otel/v1/traces',"
                  " protocol: http/protobuf, basic_auth: {username: pk, password: sk}}\n")
    environ = {**_env(out / "collector/collector.env"), "LLM_OBSERVE_CONFIG_DIR": str(config)}
    settings = Settings.from_env(environ)
    fan = forwarder_from_settings(settings, CollectorRegistry(), environ={})
    assert isinstance(fan, Fanout)
    spools = {f.destination: f.spool.directory for f in fan.forwarders  # type: ignore[union-attr]
              }
    assert spools == {"tempo": data / "spool", "langfuse": data / "spool" / "langfuse"}
    for f in fan.forwarders:
        assert f.spool is not None
        f.spool.close()
