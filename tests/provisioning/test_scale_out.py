"""``render --topology scale-out``: the OTel Collector config, Prometheus and Kubernetes files
hold together (every pipeline's parts defined, the resolver names the replicas' headless
Service, the manifests agree on ports and labels with the rest of the provisioning)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_observe.errors import ConfigError
from llm_observe.provisioning.params import RenderParams
from llm_observe.provisioning.scale_out import ScaleOutParams, render_scale_out
from tests.provisioning.test_render import run_render

P = RenderParams()


def _render(tmp: Path, **kw: Any) -> Path:
    render_scale_out(P, ScaleOutParams(**kw), tmp)
    return tmp / "scale-out"


def _docs(root: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(kind, name) -> manifest, over every file in kubernetes/."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((root / "kubernetes").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                key = (doc["kind"], doc["metadata"]["name"])
                assert key not in out, key
                out[key] = doc
    return out


@pytest.mark.parametrize("resolver", ["dns", "k8s"])
def test_collector_pipelines_are_complete_and_route_by_trace_to_the_replicas(
        tmp_path: Path, resolver: str) -> None:
    root = _render(tmp_path, resolver=resolver, namespace="obs")
    cfg = yaml.safe_load((root / "otel-collector.yaml").read_text())
    for name, pipeline in cfg["service"]["pipelines"].items():
        for part in ("receivers", "processors", "exporters"):
            for component in pipeline[part]:
                assert component in cfg[part], (name, part, component)
    assert set(cfg["service"]["extensions"]) <= set(cfg["extensions"])
    lb = cfg["exporters"]["loadbalancing"]
    assert lb["routing_key"] == "traceID" and "endpoint" not in lb["protocol"]["otlp"]
    grpc = cfg["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    http = cfg["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    assert grpc.endswith(f":{P.otlp_port}") and http.endswith(f":{P.otlp_http_port}")
    if resolver == "dns":
        assert lb["resolver"]["dns"] == {
            "hostname": "llm-observe-headless.obs.svc.cluster.local", "port": P.otlp_port,
            "interval": "5s", "timeout": "1s"}
    else:
        assert lb["resolver"]["k8s"] == {"service": "llm-observe-headless.obs",
                                         "ports": [P.otlp_port]}


@pytest.mark.parametrize("resolver", ["dns", "k8s"])
def test_manifests_agree_on_names_ports_and_labels(tmp_path: Path, resolver: str) -> None:
    docs = _docs(_render(tmp_path, resolver=resolver, replicas=4, max_replicas=12))
    dep = docs[("Deployment", "llm-observe")]
    pod = dep["spec"]["template"]
    assert dep["spec"]["replicas"] == 4
    assert dep["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items()
    (c,) = pod["spec"]["containers"]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"otlp-grpc": P.otlp_port, "otlp-http": P.otlp_http_port,
                     "api": P.api_port, "metrics": P.metrics_port}
    env = {e["name"]: e["value"] for e in c["env"]}
    assert env["LLM_OBSERVE_OTLP_PORT"] == str(P.otlp_port)
    assert env["LLM_OBSERVE_METRICS_PORT"] == str(P.metrics_port)
    assert env["LLM_OBSERVE_WRITE_AHEAD"] == "true"
    redis = docs[("Service", "llm-observe-redis")]
    redis_port = redis["spec"]["ports"][0]["port"]
    assert env["LLM_OBSERVE_REDIS_URL"] == f"redis://llm-observe-redis:{redis_port}/0"
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(P.metrics_port)
    for probe in ("readinessProbe", "livenessProbe"):
        assert c[probe]["httpGet"] == {"path": "/v1/metrics/health", "port": "api"}

    headless = docs[("Service", "llm-observe-headless")]
    assert headless["spec"]["clusterIP"] == "None"
    for svc in (headless, docs[("Service", "llm-observe")]):
        assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        for port in svc["spec"]["ports"]:
            assert port["targetPort"] in ports and port["port"] == ports[port["targetPort"]]
    monitor = docs[("ServiceMonitor", "llm-observe")]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= \
        headless["metadata"]["labels"].items()
    assert monitor["spec"]["endpoints"][0]["port"] in {
        p["name"] for p in headless["spec"]["ports"]}
    # not the API Service: each pod is scraped once
    assert not monitor["spec"]["selector"]["matchLabels"].items() <= \
        docs[("Service", "llm-observe")]["metadata"]["labels"].items()

    hpa = docs[("HorizontalPodAutoscaler", "llm-observe")]["spec"]
    assert hpa["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": "llm-observe"}
    assert (hpa["minReplicas"], hpa["maxReplicas"]) == (4, 12)
    assert {m["type"] for m in hpa["metrics"]} == {"Resource", "Pods"}
    pdb = docs[("PodDisruptionBudget", "llm-observe")]["spec"]
    assert pdb["selector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]

    lb = docs[("Deployment", "llm-observe-otel-lb")]["spec"]["template"]
    cm = docs[("ConfigMap", "llm-observe-otel-lb")]
    assert yaml.safe_load(cm["data"]["config.yaml"]) == yaml.safe_load(
        (tmp_path / "scale-out" / "otel-collector.yaml").read_text())
    assert lb["spec"]["volumes"][0]["configMap"]["name"] == cm["metadata"]["name"]
    assert docs[("Service", "llm-observe-otlp")]["spec"]["selector"].items() <= \
        lb["metadata"]["labels"].items()
    rbac = ("ServiceAccount", "llm-observe-otel-lb") in docs
    assert rbac == (resolver == "k8s")
    if rbac:
        assert lb["spec"]["serviceAccountName"] == "llm-observe-otel-lb"
        rules = docs[("Role", "llm-observe-otel-lb")]["rules"]
        assert {"endpoints", "endpointslices"} <= {r for rule in rules for r in rule["resources"]}

    rule = docs[("PrometheusRule", "llm-observe")]
    assert rule["spec"] == yaml.safe_load(
        (tmp_path / "scale-out" / "prometheus" / "alerts.yml").read_text())


def test_prometheus_scrapes_every_replica(tmp_path: Path) -> None:
    root = _render(tmp_path)
    cfg = yaml.safe_load((root / "prometheus" / "prometheus.yml").read_text())
    (job,) = [j for j in cfg["scrape_configs"] if j["job_name"] == "llm-observe"]
    keep = job["relabel_configs"][0]
    assert keep["action"] == "keep" and keep["regex"] == "llm-observe-headless;metrics"
    static = _render(tmp_path / "static", replica_targets=("10.0.0.1:9464", "10.0.0.2:9464"))
    path = static / "prometheus" / "prometheus.yml"
    cfg = yaml.safe_load(path.read_text())
    (job,) = [j for j in cfg["scrape_configs"] if j["job_name"] == "llm-observe"]
    assert job["static_configs"] == [{"targets": ["10.0.0.1:9464", "10.0.0.2:9464"]}]
    promtool = shutil.which("promtool")
    if promtool:  # Debian's build has no Kubernetes discovery: the static variant is checked
        done = subprocess.run([promtool, "check", "config", str(path)], capture_output=True,
                              text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("kw", "field"), [
    ({"namespace": "Bad_NS"}, "namespace"), ({"resolver": "consul"}, "resolver"),
    ({"replicas": 0}, "replicas"), ({"replicas": 5, "max_replicas": 3}, "replicas"),
    ({"replica_targets": ("nohost",)}, "replica_targets"), ({"image": "a b"}, "image"),
])
def test_bad_scale_out_parameters_are_named(tmp_path: Path, kw: dict[str, Any],
                                            field: str) -> None:
    with pytest.raises(ConfigError) as info:
        _render(tmp_path, **kw)
    assert info.value.entry == field
    assert not (tmp_path / "scale-out").exists()


def test_render_cli_writes_the_topology(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert run_render("--out", str(tmp_path), "--topology", "scale-out", "--replicas", "15",
                      "--namespace", "llm") == 0
    assert "(scale-out topology)" in capsys.readouterr().out
    docs = _docs(tmp_path / "scale-out")
    assert docs[("Deployment", "llm-observe")]["spec"]["replicas"] == 15
    assert docs[("HorizontalPodAutoscaler", "llm-observe")]["spec"]["maxReplicas"] == 15
    assert run_render("--out", str(tmp_path / "x"), "--topology", "scale-out",
                      "--resolver", "k8s", "--namespace", "NO") == 2
    assert "namespace: must be a DNS label" in capsys.readouterr().err
