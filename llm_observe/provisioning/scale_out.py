"""``llm-observe render --topology scale-out``: replicas behind trace-affine routing.

Writes, under ``OUT/scale-out/``::

    otel-collector.yaml         OTel Collector (contrib) config: OTLP gRPC+HTTP in, the
                                ``loadbalancing`` exporter routing by trace id to the replicas
    prometheus/prometheus.yml   scrapes every replica (Kubernetes endpoints discovery, or the
                                static ``--replica-targets``) and loads alerts.yml
    prometheus/alerts.yml       the alert rules (they aggregate with ``sum by``)
    kubernetes/*.yaml           Namespace, Redis, the replicas' Deployment, headless Service
                                (the resolver's), Service, HPA, PodDisruptionBudget,
                                ServiceMonitor, the load-balancing collector, RBAC for the
                                ``k8s`` resolver

Why the OTel Collector in front: spans of one trace must reach one replica, so a tool-call
chain's cumulative cost is summed where its spans are (Redis shares it besides, see
docs/scale-out.md). We build no cluster of our own: routing is the contrib
``loadbalancingexporter`` (exporter/loadbalancingexporter/README.md: ``routing_key:
traceID``, ``dns`` or ``k8s`` resolver).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_observe import __version__
from llm_observe.errors import ConfigError
from llm_observe.provisioning.params import TARGET, RenderParams

RESOLVERS = ("dns", "k8s")
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # a DNS-1123 label
_IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@-]{0,254}$")

# template (relative to templates/) -> output (relative to OUT/scale-out/)
OUTPUTS: tuple[tuple[str, str], ...] = (
    ("scale-out/otel-collector.yaml.j2", "otel-collector.yaml"),
    ("scale-out/prometheus.yml.j2", "prometheus/prometheus.yml"),
    ("prometheus/alerts.yml.j2", "prometheus/alerts.yml"),
    ("scale-out/kubernetes/namespace.yaml.j2", "kubernetes/00-namespace.yaml"),
    ("scale-out/kubernetes/redis.yaml.j2", "kubernetes/10-redis.yaml"),
    ("scale-out/kubernetes/llm-observe.yaml.j2", "kubernetes/20-llm-observe.yaml"),
    ("scale-out/kubernetes/autoscaling.yaml.j2", "kubernetes/30-autoscaling.yaml"),
    ("scale-out/kubernetes/monitoring.yaml.j2", "kubernetes/40-monitoring.yaml"),
    ("scale-out/kubernetes/otel-collector.yaml.j2", "kubernetes/50-otel-collector.yaml"),
)


@dataclass(frozen=True, slots=True)
class ScaleOutParams:
    """The scale-out topology's knobs; ports come from :class:`RenderParams`."""

    replicas: int = 3
    max_replicas: int = 10
    namespace: str = "llm-observe"
    app: str = "llm-observe"  # the replicas' app label, Service and Deployment names
    resolver: str = "dns"  # dns: the headless Service's A records; k8s: its endpoints
    image: str = f"llmobserve/llm-observe:{__version__}"
    collector_image: str = "otel/opentelemetry-collector-contrib:0.114.0"
    redis_image: str = "redis:7-alpine"
    # static scrape targets (host:port of each replica's /metrics) instead of discovery
    replica_targets: tuple[str, ...] = ()
    cpu_target_percent: int = 70
    queue_target_spans: int = 20_000  # per replica, the HPA's second metric

    def validate(self) -> ScaleOutParams:
        _check(self.resolver in RESOLVERS, "resolver", f"must be one of {RESOLVERS}")
        for name in ("namespace", "app"):
            _check(bool(_NAME.match(getattr(self, name))), name,
                   "must be a DNS label: lower-case letters, digits and '-', at most 63")
        for name in ("image", "collector_image", "redis_image"):
            _check(bool(_IMAGE.match(getattr(self, name))), name, "must be an image reference")
        _check(1 <= self.replicas <= self.max_replicas <= 1000, "replicas",
               "must be 1..max_replicas (max_replicas <= 1000)")
        _check(1 <= self.cpu_target_percent <= 100, "cpu_target_percent", "must be 1..100")
        _check(self.queue_target_spans >= 1, "queue_target_spans", "must be >= 1")
        for target in self.replica_targets:
            _check(bool(TARGET.match(target)), "replica_targets",
                   f"{target!r} is not host:port")
        return self

    def headless(self) -> str:
        """The headless Service the resolver reads (one A record / endpoint per replica)."""
        return f"{self.app}-headless"


def context(so: ScaleOutParams) -> dict[str, Any]:
    """What the scale-out templates see besides the single-host context: ``so`` and DNS."""
    return {"so": so, "headless_fqdn": f"{so.headless()}.{so.namespace}.svc.cluster.local",
            "pod_labels": {"app.kubernetes.io/name": so.app,
                           "app.kubernetes.io/component": "collector"},
            "lb_labels": {"app.kubernetes.io/name": f"{so.app}-otel-lb",
                          "app.kubernetes.io/component": "load-balancer"}}


def render_scale_out(params: RenderParams, so: ScaleOutParams, out_dir: Path) -> list[Path]:
    """Render the scale-out files under ``out_dir/scale-out``; return their paths."""
    from llm_observe.provisioning.render import render_file

    so.validate()
    root = out_dir / "scale-out"
    # In the cluster, replicas listen on every interface and Prometheus scrapes each pod.
    pod = dataclasses.replace(params, profile="container", api_host="0.0.0.0")
    extra = context(so)
    written = []
    for template, output in OUTPUTS:
        path = root / output
        path.parent.mkdir(parents=True, exist_ok=True)
        text = render_file(template, pod, root, extra)
        path.write_text(text, encoding="utf-8")
        written.append(path)
        # the manifests embed the collector config (a ConfigMap) and the rules (PrometheusRule)
        extra[output.replace("/", "_").replace("-", "_").replace(".", "_")] = text
    return written


def _check(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise ConfigError("render", name, message)
