"""The rendered alert rules: promtool accepts them, and its unit tests make each one fire and
stay silent where it should (tests/provisioning/alert_rules/*_test.yml, Debian's promtool)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from llm_observe.errors import ConfigError
from llm_observe.provisioning.alerts import AlertParams, load_alert_params
from llm_observe.provisioning.params import RenderParams
from llm_observe.provisioning.render import render_all

HERE = Path(__file__).parent / "alert_rules"
UNIT_TESTS = sorted(HERE.glob("*_test.yml"))
DOCS = Path(__file__).parents[2] / "docs" / "alerts.md"
PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed "
                                    "(scripts/install.sh installs Debian's prometheus)")


def _render(out: Path, alerts: AlertParams) -> Path:
    render_all(RenderParams(alerts=alerts), out, only=("prometheus/alerts.yml",))
    return out / "prometheus" / "alerts.yml"


def _rules(path: Path) -> list[dict[str, Any]]:
    return [r for g in yaml.safe_load(path.read_text())["groups"] for r in g["rules"]]


def _params_for(test_file: Path) -> AlertParams:
    params = test_file.with_name(test_file.name.replace("_test.yml", "_params.yaml"))
    return load_alert_params(params if params.exists() else None)


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


@needs_promtool
@pytest.mark.parametrize("alerts", [
    AlertParams(),
    AlertParams(spend_budgets={"checkout": 5.0, "batch jobs": 0.5}, runbook_base_url=
                "https://wiki.example.com/llm/", min_calls=0, injection_burst=0),
], ids=["defaults", "budgets+runbook"])
def test_promtool_check_rules_accepts_the_rendered_rules(tmp_path: Path,
                                                        alerts: AlertParams) -> None:
    rules = _render(tmp_path, alerts)
    done = _promtool("check", "rules", str(rules), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(_rules(rules))} rules found" in done.stdout


@needs_promtool
@pytest.mark.parametrize("test_file", UNIT_TESTS, ids=lambda p: p.name)
def test_promtool_unit_tests_pass(tmp_path: Path, test_file: Path) -> None:
    rules = _render(tmp_path, _params_for(test_file))
    # The unit tests compare labels; annotations would have to be repeated word for word.
    doc = yaml.safe_load(rules.read_text())
    for group in doc["groups"]:
        for rule in group["rules"]:
            rule.pop("annotations")
    (tmp_path / "alerts.yml").write_text(yaml.safe_dump(doc))
    shutil.copy(test_file, tmp_path / test_file.name)
    done = _promtool("test", "rules", test_file.name, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_rule_fires_and_stays_silent_in_the_unit_tests(tmp_path: Path) -> None:
    names = {r["alert"] for r in _rules(_render(tmp_path, AlertParams()))}
    fires: set[str] = set()
    silent: set[str] = set()
    for test_file in UNIT_TESTS:
        for case in yaml.safe_load(test_file.read_text())["tests"]:
            for check in case["alert_rule_test"]:
                (fires if check["exp_alerts"] else silent).add(check["alertname"])
    assert len(names) >= 16
    assert fires == names, names ^ fires
    assert silent == names, names ^ silent


def test_every_rule_has_a_runbook_in_the_docs(tmp_path: Path) -> None:
    docs = DOCS.read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
               for h in re.findall(r"^#+ (.+)$", docs, flags=re.M)}
    for rule in _rules(_render(tmp_path, AlertParams())):
        notes = rule["annotations"]
        assert notes["summary"] and len(notes["description"]) > 150, rule["alert"]
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}
        assert rule["labels"]["dashboard"]
        anchor = notes["runbook"].split("#")[1]
        assert anchor == rule["alert"].lower() and anchor in anchors, rule["alert"]
        assert "runbook_url" not in notes  # only with runbook_base_url


def test_the_rules_follow_the_parameters(tmp_path: Path) -> None:
    rules = {r["alert"]: r for r in _rules(_render(tmp_path, AlertParams(
        error_ratio=0.2, error_for="3m", rate_window="10m", job="llm-prod",
        runbook_base_url="https://wiki.example.com/llm")))}
    error = rules["LLMErrorRateHigh"]
    assert error["for"] == "3m" and "> 0.2" in error["expr"] and "[10m]" in error["expr"]
    assert 'up{job="llm-prod"}' in rules["LLMObserveCollectorDown"]["expr"]
    assert rules["LLMErrorRateHigh"]["annotations"]["runbook_url"] == \
        "https://wiki.example.com/llm/alerts.md#llmerrorratehigh"


@pytest.mark.parametrize(("text", "entry", "message"), [
    ("eror_ratio: 0.1\n", "eror_ratio", "did you mean 'error_ratio'?"),
    ("error_ratio: 1.5\n", "error_ratio", "must be a number in (0, 1)"),
    ("error_for: 5 minutes\n", "error_for", "Prometheus duration"),
    ("rate_window: 0s\n", "rate_window", "longer than 0"),
    ("spend_budget_usd_per_hour: .nan\n", "spend_budget_usd_per_hour", "finite number"),
    ("latency_p95_ms: '3000'\n", "latency_p95_ms", "finite number"),
    ("min_calls: true\n", "min_calls", "true/false"),
    ("spend_budgets: {'a\"b': 5}\n", 'spend_budgets.a"b', "no \""),
    ("spend_budgets: {checkout: -1}\n", "spend_budgets.checkout", "> 0"),
    ("job: 'x\"}) or vector(1'\n", "job", "scrape job name"),
    ("runbook_base_url: javascript:alert(1)\n", "runbook_base_url", "http(s) URL"),
    ("- error_ratio\n", "alerts", "mapping"),
    ("error_ratio: [\n", "line 2", "not valid YAML"),
])
def test_a_bad_parameter_file_names_the_file_and_entry(tmp_path: Path, text: str, entry: str,
                                                       message: str) -> None:
    path = tmp_path / "alerts.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_alert_params(path)
    assert info.value.path == str(path)
    assert info.value.entry == entry
    assert message in info.value.message


def test_render_stops_on_a_bad_alerts_file_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "alerts.yaml"
    bad.write_text("pii_burst: -3\n")
    cmd = [sys.executable, "-m", "llm_observe.cli", "render", "--out", str(tmp_path / "out"),
           "--alerts", str(bad)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == f"llm-observe render: {bad}: pii_burst: must be a finite " \
        "number >= 0"
    assert not (tmp_path / "out" / "prometheus" / "alerts.yml").exists()
