"""`llm-observe render`: every file parses and says what Prometheus, Tempo, Loki, Grafana need."""

from __future__ import annotations

import argparse
import configparser
import json
import logging
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
import yaml

from llm_observe.collector.logformat import JsonFormatter
from llm_observe.collector.settings import ENV_PREFIX, Settings
from llm_observe.provisioning import render
from llm_observe.provisioning.render import DASHBOARD_FILES, OUTPUTS
from tests.provisioning.dashboards import load_dashboards, targets_of

SPEC_DASHBOARDS = {  # spec 2.7: uid -> title
    "llm-latency-ttft-dashboard": "LLM Latency & TTFT",
    "llm-cost-dashboard": "LLM Cost Dashboard",
    "llm-error-retry-dashboard": "LLM Error & Retry",
    "llm-security-safety-dashboard": "LLM Security & Safety",
}
# beside the spec's four: the one that needs only the OTel GenAI metrics
EXTRA_DASHBOARDS = {"llm-genai-semconv-dashboard": "LLM GenAI (OTel semantic-convention metrics)",
                    "llm-agents-dashboard": "LLM Agents & Tools"}
AGENT_EXPOSED = {f"{h}_{s}" for h in (
    "gen_ai_invoke_agent_duration_seconds", "gen_ai_execute_tool_duration_seconds",
    "gen_ai_invoke_workflow_duration_seconds", "mcp_client_operation_duration_seconds",
    "mcp_server_operation_duration_seconds", "llm_agent_run_cost_usd_micro",
    "gen_ai_invoke_agent_inference_calls", "gen_ai_invoke_agent_tool_calls")
    for s in ("bucket", "sum", "count")} | {"llm_untrusted_text_flags_total"}
AGENT_LABELS = {"gen_ai_agent_name", "gen_ai_tool_name", "gen_ai_workflow_name"}
GENAI_EXPOSED = {f"gen_ai_client_{h}_{s}" for h in (
    "token_usage", "operation_duration_seconds", "operation_time_to_first_chunk_seconds")
    for s in ("bucket", "sum", "count")}
GENAI_LABELS = {"gen_ai_provider_name", "gen_ai_request_model", "gen_ai_token_type"}
PANEL_TYPES = {"timeseries", "piechart", "gauge", "stat", "bargauge", "barchart", "table"}
# spec 2.6 series as prometheus_client exposes them
EXPOSED = {
    "llm_tokens_total", "llm_cost_usd_micro_total", "llm_pii_detected_total",
    "llm_injection_attempts_total", "llm_finish_reason_total", "llm_spans_total",
    *(f"{h}_{s}" for h in ("llm_latency_ms_total", "llm_latency_ms_ttft")
      for s in ("bucket", "sum", "count")),
}


def run_render(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    render.add_arguments(parser, "render")
    return render.run(parser.parse_args(list(argv)))


@pytest.fixture(scope="module")
def native(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("native")
    assert run_render("--out", str(out)) == 0
    return out


@pytest.fixture(scope="module")
def container(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("container")
    assert run_render("--out", str(out), "--profile", "container") == 0
    return out


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def _env(path: Path) -> dict[str, str]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return dict(ln.split("=", 1) for ln in lines)


def test_every_output_is_written_and_parses(native: Path, container: Path) -> None:
    for out in (native, container):
        for _, name in OUTPUTS:
            path = out / name
            assert path.is_file(), name
            if name.endswith((".yml", ".yaml")):
                assert isinstance(_yaml(path), dict), name
            elif name.endswith(".json"):
                assert isinstance(json.loads(path.read_text()), dict), name
            elif name.endswith(".ini"):
                configparser.ConfigParser(interpolation=None).read_string(path.read_text())
        for d in render.EMPTY_DIRS:
            assert (out / d).is_dir()


def test_render_prints_one_line_and_rejects_a_bad_option(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    assert run_render("--out", str(tmp_path), "--scrape-interval", "2s") == 0
    assert capsys.readouterr().out.strip() == (
        f"rendered {len(OUTPUTS)} files into {tmp_path.resolve()} (native profile); Grafana "
        f"admin password generated in {tmp_path.resolve() / 'data' / 'grafana' / 'admin-password'}")
    assert "scrape_interval: 2s" in (tmp_path / "prometheus/prometheus.yml").read_text()
    assert run_render("--out", str(tmp_path / "x"), "--grafana-port", "70000") == 2
    assert "grafana_port: must be a port" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_prometheus_config_is_valid_and_scrapes_every_5s(native: Path) -> None:
    path = native / "prometheus/prometheus.yml"
    check = subprocess.run([shutil.which("promtool") or "promtool", "check", "config", str(path)],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    cfg = _yaml(path)
    assert cfg["global"]["scrape_interval"] == "5s"  # spec 6.1 / 8
    (job,) = [j for j in cfg["scrape_configs"] if j["job_name"] == "llm-observe"]
    assert job["static_configs"][0]["targets"] == ["127.0.0.1:9464"]
    assert job["metrics_path"] == "/metrics"


def test_dashboards_have_the_spec_titles_uids_and_a_sound_layout(native: Path) -> None:
    boards = load_dashboards(native)
    assert {uid: b["title"] for uid, b in boards.items()} == {**SPEC_DASHBOARDS, **EXTRA_DASHBOARDS}
    for uid, board in boards.items():
        panels = board["panels"]
        data = [p for p in panels if p["title"] != "Alerts"]
        (alerts,) = [p for p in panels if p["title"] == "Alerts"]  # one per dashboard
        if uid in SPEC_DASHBOARDS:
            assert len(data) == 3, uid  # spec 2.7 names three panels per dashboard
        assert len({p["id"] for p in panels}) == len(panels)
        cells: set[tuple[int, int]] = set()
        for p in panels:
            assert p["type"] in PANEL_TYPES, (uid, p["type"])
            g = p["gridPos"]
            assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["y"] >= 0
            assert g["x"] + g["w"] <= 24, (uid, p["title"])  # Grafana's grid is 24 wide
            mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                    for y in range(g["y"], g["y"] + g["h"])}
            assert not cells & mine, f"{uid}: {p['title']} overlaps another panel"
            cells |= mine
            assert targets_of(p), p["title"]
            for t in targets_of(p):
                assert t["datasource"] == {"type": "prometheus", "uid": "prometheus"}
        for p in data:
            for t in targets_of(p):
                names = set(re.findall(r"\b(?:llm|gen_ai|mcp)_[a-z_]+\b", t["expr"])) \
                    - GENAI_LABELS - AGENT_LABELS - {"mcp_method_name"}
                allowed = AGENT_EXPOSED if uid == "llm-agents-dashboard" else \
                    GENAI_EXPOSED if uid in EXTRA_DASHBOARDS else EXPOSED
                assert names and names <= allowed, (p["title"], names - allowed)
        (t,) = targets_of(alerts)
        assert t["expr"].startswith("ALERTS{") and t["format"] == "table", t
        if uid in SPEC_DASHBOARDS:  # its own rules and the collector's health
            assert t["expr"] == f'ALERTS{{dashboard=~"{uid}|collector"}}'
        names = [v["name"] for v in board["templating"]["list"]]
        assert names == (["service", "provider", "model"] if uid in SPEC_DASHBOARDS
                         else ["agent", "tool"] if uid == "llm-agents-dashboard"
                         else ["provider", "model"])
        assert board["refresh"] == "10s"  # spans visible within 5-10 s (spec 2.7 / 8)


def test_dashboard_provider_hot_reloads_the_folder_every_30s(native: Path) -> None:
    (provider,) = _yaml(native / "grafana/provisioning/dashboards/llm-observe.yaml")["providers"]
    assert provider["folder"] == "LLM Observability"
    assert provider["updateIntervalSeconds"] == 30
    assert provider["type"] == "file"
    listed = sorted(p.name for p in Path(provider["options"]["path"]).glob("*.json"))
    assert listed == sorted(Path(name).name for name in DASHBOARD_FILES)


def test_datasources_link_traces_metrics_and_logs(native: Path) -> None:
    sources = {d["uid"]: d for d in
               _yaml(native / "grafana/provisioning/datasources/llm-observe.yaml")["datasources"]}
    assert {uid: d["type"] for uid, d in sources.items()} == {
        "prometheus": "prometheus", "tempo": "tempo", "loki": "loki"}
    prom, tempo, loki = sources["prometheus"], sources["tempo"], sources["loki"]
    assert prom["isDefault"] is True and prom["url"] == "http://127.0.0.1:9090"
    assert prom["jsonData"]["timeInterval"] == "5s"
    assert prom["jsonData"]["exemplarTraceIdDestinations"][0]["datasourceUid"] == "tempo"
    t2m = tempo["jsonData"]["tracesToMetrics"]
    assert t2m["datasourceUid"] == "prometheus"
    assert {"key": "gen_ai.request.model", "value": "model"} in t2m["tags"]
    # Grafana expands $VARS in provisioning files: its own $__tags must be written $$__tags
    assert all("{$$__tags}" in q["query"] or "$$__tags}" in q["query"] for q in t2m["queries"])
    assert not any(re.search(r"(?<!\$)\$__", q["query"]) for q in t2m["queries"])
    assert tempo["jsonData"]["tracesToLogsV2"]["datasourceUid"] == "loki"
    assert tempo["url"] == "http://127.0.0.1:3200"
    (derived,) = loki["jsonData"]["derivedFields"]
    assert derived["datasourceUid"] == "tempo" and derived["url"] == "$${__value.raw}"
    line = '{"level": "info", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736", "msg": "x"}'
    match = re.search(derived["matcherRegex"], line)
    assert match and match.group(1) == "4bf92f3577b34da6a3ce929d0e0e4736"


def test_latency_panel_links_to_the_slow_spans_in_tempo(native: Path) -> None:
    board = load_dashboards(native)["llm-latency-ttft-dashboard"]
    (link,) = board["panels"][0]["fieldConfig"]["defaults"]["links"]
    url = urlsplit(link["url"])
    assert url.path == "/explore"
    raw = parse_qs(url.query)["panes"][0]
    # what Grafana does on click: substitute its variables, then the browser decodes once
    clicked = (raw.replace("${__field.labels.model:percentencode}", "gpt-4o")
               .replace("${__value.raw}", "812.5").replace("${__from}", "1700000000000")
               .replace("${__to}", "1700003600000"))
    pane = json.loads(unquote(clicked))["traces"]
    (query,) = pane["queries"]
    assert query["datasource"]["uid"] == "tempo" and query["queryType"] == "traceql"
    assert query["query"] == '{ span.gen_ai.request.model = "gpt-4o" && duration >= 812.5ms }'
    assert pane["range"] == {"from": "1700000000000", "to": "1700003600000"}


def test_collector_settings_file_is_read_by_settings(native: Path, container: Path) -> None:
    for out in (native, container):
        env = _env(out / "collector/collector.env")
        fields = {ENV_PREFIX + f.upper() for f in Settings.__dataclass_fields__} | {
            "LLM_OBSERVE_LOG_LEVEL", "LLM_OBSERVE_LOG_FORMAT"}  # serve's own logging options
        assert set(env) <= fields, set(env) - fields
        settings = Settings.from_env(env)
        assert (settings.port, settings.metrics_port, settings.otlp_port,
                settings.otlp_http_port) == (8000, 9464, 4317, 4318)
    native_settings = Settings.from_env(_env(native / "collector/collector.env"))
    assert native_settings.host == "127.0.0.1" and native_settings.tempo_endpoint is None
    boxed = Settings.from_env(_env(container / "collector/collector.env"))
    assert boxed.host == "0.0.0.0" and boxed.tempo_endpoint == "127.0.0.1:4319"


def test_tempo_takes_otlp_on_an_internal_loopback_port(container: Path) -> None:
    cfg = _yaml(container / "tempo/tempo.yaml")
    grpc = cfg["distributor"]["receivers"]["otlp"]["protocols"]["grpc"]
    assert grpc["endpoint"] == "127.0.0.1:4319"
    assert cfg["storage"]["trace"]["backend"] == "local"
    assert cfg["storage"]["trace"]["local"]["path"] == "/var/lib/llm-observe/tempo/blocks"
    assert cfg["server"]["http_listen_port"] == 3200


def test_logs_path_from_collector_log_to_loki(container: Path) -> None:
    alloy = (container / "alloy/config.alloy").read_text()
    assert '"__path__" = "/var/log/llm-observe/collector.log"' in alloy
    assert 'url = "http://127.0.0.1:3100/loki/api/v1/push"' in alloy
    loki = _yaml(container / "loki/loki.yaml")
    assert loki["server"]["http_listen_port"] == 3100
    assert loki["server"]["http_listen_address"] == "127.0.0.1"
    assert loki["common"]["path_prefix"] == "/var/lib/llm-observe/loki"


def test_trace_and_log_links_meet_in_the_collectors_json_log_lines(container: Path) -> None:
    # The container's collector writes JSON lines (collector.env); a line logged about a
    # span carries its trace id, which the Loki datasource's derived field must find, and
    # Tempo's "Logs for this span" must query the stream Alloy writes those lines to.
    assert _env(container / "collector/collector.env")["LLM_OBSERVE_LOG_FORMAT"] == "json"
    sources = {d["name"]: d for d in _yaml(
        container / "grafana/provisioning/datasources/llm-observe.yaml")["datasources"]}
    to_logs = sources["Tempo"]["jsonData"]["tracesToLogsV2"]
    assert to_logs["customQuery"] is True
    alloy = (container / "alloy/config.alloy").read_text()
    job = re.search(r'"job" = "([^"]+)"', alloy)
    assert job is not None
    # Grafana expands $VARS in provisioning files: "$$" is a literal "$".
    assert to_logs["query"] == f'{{job="{job.group(1)}"}} |= "$${{__trace.traceId}}"'
    assert {"key": "service.name", "value": "service_name"} in to_logs["tags"]
    record = logging.LogRecord("llm_observe.processors.cost", logging.WARNING, __file__, 1,
                               "no price for model %r", ("m",), None)
    record.trace_id = "0af7651916cd43dd8448eb211c80319c"
    line = JsonFormatter().format(record)
    [derived] = sources["Loki"]["jsonData"]["derivedFields"]
    found = re.search(derived["matcherRegex"], line)
    assert found is not None and found.group(1) == record.trace_id
    assert json.loads(line)["level"] == "warning"  # the label Alloy's stage.json extracts


def test_grafana_uses_wal_and_no_default_password(container: Path) -> None:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read_string((container / "grafana/grafana.ini").read_text())
    assert ini["database"]["wal"] == "true"  # spec 1: WAL mode permanently
    assert ini["security"]["admin_password"] == (
        "$__file{/var/lib/llm-observe/grafana/admin-password}")
    assert ini["server"]["http_port"] == "3000" and ini["server"]["http_addr"] == "0.0.0.0"
    assert ini["paths"]["provisioning"] == str(container.resolve() / "grafana/provisioning")
    assert ini["users"]["allow_sign_up"] == "false"


def test_out_that_is_a_file_is_one_line_exit_2(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    assert run_render("--out", str(a_file)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is a file" in err and str(a_file) in err
    assert a_file.read_text() == "mine\n"


def test_native_render_creates_the_admin_password_grafana_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "prov"
    assert run_render("--out", str(out)) == 0
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(out / "grafana" / "grafana.ini")
    reference = ini["security"]["admin_password"]
    path = Path(re.fullmatch(r"\$__file\{(.+)\}", reference).group(1))  # type: ignore[union-attr]
    assert path.is_file() and (path.stat().st_mode & 0o777) == 0o600
    password = path.read_text()
    assert len(password) >= 16
    assert str(path) in capsys.readouterr().out  # the user is told where it is
    assert run_render("--out", str(out)) == 0
    assert path.read_text() == password  # Grafana keeps the first one in its database


def test_latency_ttft_and_cost_panels_show_exemplars(native: Path) -> None:
    boards = load_dashboards(native)
    with_exemplars = {(uid, p["title"]) for uid, board in boards.items()
                      for p in board["panels"]
                      if p.get("targets") and all(t.get("exemplar") for t in p["targets"])}
    assert with_exemplars == {
        ("llm-latency-ttft-dashboard", "Latency percentiles per model (p50 / p95 / p99)"),
        ("llm-latency-ttft-dashboard", "TTFT percentiles per model (p50 / p95 / p99)"),
        ("llm-cost-dashboard", "Cumulative cost per service and model (USD)"),
        ("llm-genai-semconv-dashboard", "Operation duration p50 / p95 per model (s)"),
        ("llm-genai-semconv-dashboard", "Time to first chunk p50 / p95 per model (s)"),
    }
    # each names a series that carries exemplars (docs/metrics.md, "Exemplars")
    carrying = ("llm_latency_ms_total_bucket", "llm_latency_ms_ttft_bucket",
                "llm_cost_usd_micro_total", "gen_ai_client_operation_duration_seconds_bucket",
                "gen_ai_client_operation_time_to_first_chunk_seconds_bucket")
    for uid, title in with_exemplars:
        (panel,) = [p for p in boards[uid]["panels"] if p["title"] == title]
        assert all(any(c in t["expr"] for c in carrying) for t in panel["targets"]), title
