"""``llm-observe render --out DIR``: write every provisioning file from the Jinja templates.

Layout written under DIR (the container renders into /etc/llm-observe/provisioning
at every start, so a new image brings new dashboards)::

    prometheus/prometheus.yml         scrape config for the collector's /metrics
    prometheus/alerts.yml             alert rules (thresholds: AlertParams, docs/alerts.md)
    tempo/tempo.yaml                  trace backend (OTLP gRPC in on loopback, local storage)
    loki/loki.yaml, alloy/config.alloy   logs: Alloy tails the collector's log into Loki
    collector/collector.env           the collector's own settings (LLM_OBSERVE_* lines)
    grafana/grafana.ini               Grafana server settings (WAL, no default password)
    grafana/provisioning/...          datasources + dashboard provider
    grafana/dashboards/*.json         the four dashboards of spec 2.7, the GenAI and agents ones
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import secrets
import sys
from importlib.resources import files
from pathlib import Path
from typing import Any

from llm_observe.errors import ConfigError
from llm_observe.provisioning import links
from llm_observe.provisioning.alerts import load_alert_params
from llm_observe.provisioning.params import (
    FOLDER,
    LOG_JOB,
    LOKI_UID,
    PROFILES,
    PROMETHEUS_UID,
    TEMPO_UID,
    RenderParams,
)
from llm_observe.provisioning.scale_out import ScaleOutParams, render_scale_out

# template (relative to templates/) -> output file (relative to --out)
OUTPUTS: tuple[tuple[str, str], ...] = (
    ("prometheus/prometheus.yml.j2", "prometheus/prometheus.yml"),
    ("prometheus/alerts.yml.j2", "prometheus/alerts.yml"),
    ("tempo/tempo.yaml.j2", "tempo/tempo.yaml"),
    ("loki/loki.yaml.j2", "loki/loki.yaml"),
    ("alloy/config.alloy.j2", "alloy/config.alloy"),
    ("collector/collector.env.j2", "collector/collector.env"),
    ("grafana/grafana.ini.j2", "grafana/grafana.ini"),
    ("grafana/provisioning/datasources/llm-observe.yaml.j2",
     "grafana/provisioning/datasources/llm-observe.yaml"),
    ("grafana/provisioning/dashboards/llm-observe.yaml.j2",
     "grafana/provisioning/dashboards/llm-observe.yaml"),
    ("grafana/dashboards/llm-latency-ttft.json.j2", "grafana/dashboards/llm-latency-ttft.json"),
    ("grafana/dashboards/llm-cost.json.j2", "grafana/dashboards/llm-cost.json"),
    ("grafana/dashboards/llm-error-retry.json.j2", "grafana/dashboards/llm-error-retry.json"),
    ("grafana/dashboards/llm-security-safety.json.j2",
     "grafana/dashboards/llm-security-safety.json"),
    ("grafana/dashboards/llm-genai-semconv.json.j2", "grafana/dashboards/llm-genai-semconv.json"),
    ("grafana/dashboards/llm-agents-tools.json.j2", "grafana/dashboards/llm-agents-tools.json"),
)
# Grafana logs an error for each provisioning folder it cannot read; create them empty.
EMPTY_DIRS = ("grafana/provisioning/plugins", "grafana/provisioning/alerting")
DASHBOARD_FILES = tuple(out for _, out in OUTPUTS if out.startswith("grafana/dashboards/"))


def template_context(params: RenderParams, out_dir: Path) -> dict[str, Any]:
    """Everything a template may reference: the params, derived paths, UIDs and links."""
    context: dict[str, Any] = {f: getattr(params, f) for f in params.__dataclass_fields__}
    context["a"] = params.alerts
    context.update(params.paths(out_dir))
    context.update(
        scrape_timeout=params.scrape_timeout(),
        folder=FOLDER,
        prometheus_uid=PROMETHEUS_UID,
        tempo_uid=TEMPO_UID,
        loki_uid=LOKI_UID,
        log_job=LOG_JOB,
        trace_metric_tags=links.TRACE_METRIC_TAGS,
        trace_metric_queries=links.TRACE_METRIC_QUERIES,
        slow_spans_url=links.explore_traces_url(TEMPO_UID, links.slow_spans_traceql()),
    )
    return context


def render_file(template: str, params: RenderParams, out_dir: Path,
                extra: dict[str, Any] | None = None) -> str:
    """The text of one template rendered for ``out_dir`` (nothing is written)."""
    import jinja2  # only the render path needs Jinja

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(files("llm_observe.provisioning") / "templates")),
        undefined=jinja2.StrictUndefined,  # a typo in a template fails loudly
        keep_trailing_newline=True,
        autoescape=False,  # YAML/JSON/INI, not HTML; JSON values go through |tojson
    )
    return env.get_template(template).render({**template_context(params, out_dir),
                                              **(extra or {})})


def render_all(params: RenderParams, out_dir: Path, only: tuple[str, ...] | None = None,
               metrics_token: str | None = None) -> list[Path]:
    """Render every template (or the outputs named in ``only``) into ``out_dir``; return paths.

    With ``metrics_token`` (default: ``LLM_OBSERVE_METRICS_TOKEN``), Prometheus scrapes
    /metrics with it, read from ``OUT/prometheus/metrics-token`` (written mode 0600).
    """
    params.validate()
    token = metrics_token or os.environ.get("LLM_OBSERVE_METRICS_TOKEN") or None
    if token:
        path = out_dir / "prometheus" / "metrics-token"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(token, encoding="utf-8")
        params = dataclasses.replace(params, metrics_token_file=str(path.resolve()))
    written: list[Path] = []
    for template, output in OUTPUTS:
        if only is not None and output not in only:
            continue
        path = out_dir / output
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_file(template, params, out_dir), encoding="utf-8")
        written.append(path)
    if only is None:
        for d in EMPTY_DIRS:
            (out_dir / d).mkdir(parents=True, exist_ok=True)
    return written


def _scale_out_params(args: argparse.Namespace) -> ScaleOutParams:
    targets = tuple(t.strip() for t in args.replica_targets.split(",") if t.strip()) \
        if args.replica_targets else None
    given = {"replicas": args.replicas, "max_replicas": args.max_replicas,
             "namespace": args.namespace, "resolver": args.resolver, "image": args.image,
             "replica_targets": targets}
    base = ScaleOutParams()
    if args.replicas is not None and args.max_replicas is None:
        given["max_replicas"] = max(base.max_replicas, args.replicas)
    return dataclasses.replace(base, **{k: v for k, v in given.items() if v is not None})


def ensure_admin_password(params: RenderParams, out_dir: Path) -> tuple[Path, bool]:
    """The Grafana admin password file grafana.ini reads; created (random, 0600) if absent.

    Returns ``(path, created)``. An existing file is kept: Grafana stores the password in
    its database at first start, and a new one would no longer match.
    """
    path = Path(params.paths(out_dir)["admin_password_file"])
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path, False
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(secrets.token_urlsafe(18))
    return path, True


def add_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """Options of ``llm-observe render``."""
    d = RenderParams()
    parser.add_argument("--out", required=True, type=Path, help="directory to write into")
    parser.add_argument("--profile", choices=PROFILES, default="native",
                        help="native: all on 127.0.0.1, state under --out; "
                             "container: the all-in-one image's hosts and paths")
    parser.add_argument("--scrape-interval",
                        help=f"Prometheus scrape interval ({d.scrape_interval})")
    parser.add_argument("--metrics-host", help="host Prometheus scrapes /metrics on (127.0.0.1)")
    parser.add_argument("--metrics-port", type=int,
                        help=f"collector /metrics port ({d.metrics_port})")
    parser.add_argument("--api-port", type=int, help=f"collector REST API port ({d.api_port})")
    parser.add_argument("--otlp-port", type=int, help=f"collector OTLP gRPC port ({d.otlp_port})")
    parser.add_argument("--otlp-http-port", type=int,
                        help=f"collector OTLP/HTTP port ({d.otlp_http_port})")
    parser.add_argument("--prometheus-port", type=int,
                        help=f"Prometheus UI/API port ({d.prometheus_port})")
    parser.add_argument("--grafana-port", type=int, help=f"Grafana port ({d.grafana_port})")
    parser.add_argument("--tempo-otlp-port", type=int,
                        help=f"Tempo's internal OTLP gRPC port ({d.tempo_otlp_port})")
    parser.add_argument("--data-dir", help="state directory (default: OUT/data, container: "
                                           "/var/lib/llm-observe)")
    parser.add_argument("--log-dir", help="log directory (default: OUT/logs, container: "
                                          "/var/log/llm-observe)")
    parser.add_argument("--alerts", type=Path, metavar="FILE",
                        help="YAML of alert thresholds (docs/alerts.md; default: built-in)")
    so = parser.add_argument_group("scale-out topology (docs/scale-out.md)")
    so.add_argument("--topology", choices=("single", "scale-out"), default="single",
                    help="single: one collector (default); scale-out: an OTel Collector "
                         "routing by trace id to N replicas, Kubernetes manifests, "
                         "Prometheus for every replica (written under OUT/scale-out)")
    so.add_argument("--replicas", type=int, help="replicas (3; the HPA's minimum)")
    so.add_argument("--max-replicas", type=int, help="the HPA's maximum (10)")
    so.add_argument("--namespace", help="Kubernetes namespace (llm-observe)")
    so.add_argument("--resolver", choices=("dns", "k8s"),
                    help="how the load balancer finds replicas (dns: headless Service)")
    so.add_argument("--image", help="the replicas' image (llmobserve/llm-observe:VERSION)")
    so.add_argument("--replica-targets", metavar="HOST:PORT,...",
                    help="scrape these /metrics targets instead of Kubernetes discovery")


def run(args: argparse.Namespace) -> int:
    """Render; print one line naming the directory, or the bad option."""
    try:
        params = RenderParams.for_profile(
            args.profile, scrape_interval=args.scrape_interval, metrics_host=args.metrics_host,
            metrics_port=args.metrics_port, api_port=args.api_port, otlp_port=args.otlp_port,
            otlp_http_port=args.otlp_http_port,
            prometheus_port=args.prometheus_port, grafana_port=args.grafana_port,
            tempo_otlp_port=args.tempo_otlp_port, data_dir=args.data_dir, log_dir=args.log_dir,
            alerts=load_alert_params(args.alerts) if args.alerts else None)
        if args.out.exists() and not args.out.is_dir():
            print(f"llm-observe render: error: --out {args.out} is a file; give a directory "
                  "(created when missing)", file=sys.stderr)
            return 2
        if args.topology == "scale-out":
            written = render_scale_out(params, _scale_out_params(args), args.out)
            password = None
        else:
            written = render_all(params, args.out)
            password = ensure_admin_password(params, args.out) if params.profile == "native" \
                else None
    except ConfigError as exc:
        print(f"llm-observe render: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path component is a file, no permission, disk full
        print(f"llm-observe render: error: cannot write into {args.out}: "
              f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else ""),
              file=sys.stderr)
        return 2
    kind = "scale-out topology" if args.topology == "scale-out" else f"{params.profile} profile"
    line = f"rendered {len(written)} files into {args.out.resolve()} ({kind})"
    if password is not None:
        path, created = password
        verb = "generated in" if created else "kept in"
        line += f"; Grafana admin password {verb} {path.resolve()}"
    print(line)
    return 0
