"""The observability pack (deploy/observability/): the alert rules pass their promtool
unit tests, every query of the dashboard and the alerts parses and names only metrics
docshelf exports, and a real Prometheus that scraped a real ``docshelf serve``
evaluates every one of them without error.

promtool and prometheus come from Debian's ``prometheus`` package (``make install``
adds it); without them these tests skip with the reason, and fail under CI=true.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from prometheus_client import REGISTRY

import docshelf.telemetry
from docshelf.shelf import Shelf
from tests.optional import require_module, require_program

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "deploy" / "observability"
DASHBOARD = PACK / "grafana" / "ingest-dashboard.json"
ALERTS = PACK / "alerts.yml"
INSTALL = "apt-get install prometheus (make install does it)"
# Series Prometheus itself makes for every target.
SCRAPE_TOKEN = "scrape-token-of-the-test"
PROMETHEUS_OWN = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}


@dataclass(frozen=True)
class Query:
    where: str  # "panel 'Stage throughput'" or "alert DocshelfJobStuck"
    expr: str


def panel_queries() -> list[Query]:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [
        Query(f"panel {panel['title']!r}", target["expr"])
        for panel in dashboard["panels"]
        for target in panel.get("targets", [])
    ]


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text(encoding="utf-8"))["groups"]
    return [rule for group in groups for rule in group["rules"]]


def alert_queries() -> list[Query]:
    return [Query(f"alert {rule['alert']}", rule["expr"]) for rule in alert_rules()]


def exported_names() -> set[str]:
    """Every series name docshelf's /metrics can carry (the suffixes of each type): every
    metric made, as a scrape makes them, used yet or not (alone, this file uses few)."""
    docshelf.telemetry.realise_metrics()
    suffixes = {
        "counter": ("_total", "_created"),
        "histogram": ("_bucket", "_count", "_sum", "_created"),
        "gauge": ("",),
    }
    names: set[str] = set()
    for family in REGISTRY.collect():
        names |= {family.name + s for s in suffixes.get(family.type, ("",))}
        names |= {sample.name for sample in family.samples}
    return names


def metric_names(expr: str) -> set[str]:
    promql = require_module("promql_parser", "pip install promql-parser")
    found: set[str] = set()

    def visit(node: Any) -> bool:
        if isinstance(node, promql.VectorSelector) and node.name:
            found.add(node.name)
        return True

    promql.walk(promql.parse(expr), visit)
    return found


# -- the files themselves ---------------------------------------------------------------
def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    cases = yaml.safe_load((PACK / "alerts.test.yml").read_text(encoding="utf-8"))["tests"]
    checks = [check for case in cases for check in case["alert_rule_test"]]
    for rule in alert_rules():
        mine = [c for c in checks if c["alertname"] == rule["alert"]]
        assert any(c["exp_alerts"] for c in mine), f"{rule['alert']}: no case where it fires"
        assert any(not c["exp_alerts"] for c in mine), f"{rule['alert']}: no case where it is quiet"


def test_the_alerts_the_design_asks_for_are_there() -> None:
    used = {name for q in alert_queries() for name in metric_names(q.expr)}
    # failure spikes, dead-letter growth, stuck jobs, worker heartbeat, upload p95, coverage
    assert {
        "ingest_failures_total",
        "ingest_queue_depth",
        "ingest_stage_oldest_seconds",
        "ingest_worker_heartbeat_timestamp_seconds",
        "upload_latency_ms_bucket",
        "embedding_coverage_ratio",
    } <= used


def test_the_dashboard_has_the_panels_the_design_asks_for() -> None:
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    exprs = " ".join(t["expr"] for p in panels for t in p["targets"])
    for name in (
        "ingest_jobs_total",  # stage throughput
        "ingest_failures_total",  # failures by reason
        "ingest_queue_depth",  # queue depth and the dead-letter state
        "embedding_upserts_total",  # dedup hit ratio
        "search_latency_ms_bucket",  # search latency
        "retrieval_cache_lookups_total",
        "ingest_workers",
        "ingest_lease_renewals_total",
    ):
        assert name in exprs, name
    heatmaps = {t["expr"] for p in panels if p["type"] == "heatmap" for t in p["targets"]}
    for stage in ("parsing", "chunking", "embedding", "indexing"):
        assert any(f'stage="{stage}"' in e and "ingest_latency_ms_bucket" in e for e in heatmaps)
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert all(t["datasource"]["uid"] == "${datasource}" for p in panels for t in p["targets"])


def test_every_query_names_only_metrics_docshelf_exports() -> None:
    exported = exported_names() | PROMETHEUS_OWN
    unknown = {
        f"{q.where}: {name}"
        for q in panel_queries() + alert_queries()
        for name in metric_names(q.expr)
        if name not in exported
    }
    assert not unknown, sorted(unknown)


def test_a_query_naming_an_unknown_metric_is_caught() -> None:
    assert "ingest_jobz_total" not in exported_names()
    assert metric_names("sum(rate(ingest_jobz_total[5m])) / max(up)") == {
        "ingest_jobz_total",
        "up",
    }


# -- promtool -------------------------------------------------------------------------------
def test_promtool_unit_tests_of_the_alert_rules_pass() -> None:
    promtool = require_program("promtool", INSTALL)
    run = subprocess.run(
        [promtool, "test", "rules", "alerts.test.yml"],
        cwd=PACK,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_promtool_checks_the_config_and_parses_every_panel_query(tmp_path: Path) -> None:
    promtool = require_program("promtool", INSTALL)
    run = subprocess.run(
        [promtool, "check", "config", "prometheus.yml"],
        cwd=PACK,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # promtool parses the expressions of a rules file: each panel query as a recording rule
    rules = [
        {"record": f"docshelf:panel_{i}", "expr": q.expr} for i, q in enumerate(panel_queries())
    ]
    path = tmp_path / "panels.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    run = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(yaml.safe_dump({"groups": [{"name": "x", "rules": [
        {"record": "docshelf:broken", "expr": "sum by (stage (rate(ingest_jobs_total[5m]))"}
    ]}]}))  # fmt: skip
    run = subprocess.run([promtool, "check", "rules", str(broken)], capture_output=True, text=True)
    assert run.returncode != 0


# -- a real Prometheus scraping a real `docshelf serve` -------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(what: str, check: Any, seconds: float = 30.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        try:
            result = check()
        except httpx.HTTPError:
            result = None
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture
def served(isolated_home: Path, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``docshelf serve`` (lexical-only, one in-process worker) in a child process;
    yields its base URL and a user's token."""
    shelf = Shelf(isolated_home, embedder=None)
    _, token = shelf.create_user("alice")
    shelf.close()
    port = _free_port()
    env = {
        **os.environ,
        "DOCSHELF_HOME": str(isolated_home),
        "DOCSHELF_EMBEDDER": "none",
        "DOCSHELF_METRICS_TOKEN": SCRAPE_TOKEN,
    }
    docshelf = Path(sys.executable).parent / "docshelf"
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [str(docshelf), "serve", "--port", str(port), "--workers", "1"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait("docshelf serve", lambda: httpx.get(f"{url}/readyz", timeout=2).status_code == 200)
        yield url, token
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture
def prometheus() -> str:
    return require_program("prometheus", INSTALL)


def test_a_real_prometheus_scrapes_serve_and_evaluates_every_query(
    prometheus: str, served: tuple[str, str], tmp_path: Path
) -> None:
    url, token = served
    auth = {"Authorization": f"Bearer {token}"}
    # something for the metrics to count: an upload taken through the pipeline, searches
    up = httpx.post(
        f"{url}/v1/documents",
        headers=auth,
        files={"file": ("notes.md", b"# Notes\n\nPrometheus scrapes docshelf.\n")},
    )
    assert up.status_code == 202, up.text
    doc = up.json()["document_id"]
    _wait(
        "the upload to complete",
        lambda: httpx.get(f"{url}/v1/documents/{doc}", headers=auth).json()["status"] == "complete",
    )
    for _ in range(2):  # the second one is a retrieval-cache hit
        found = httpx.post(f"{url}/v1/search", headers=auth, json={"query": "prometheus"})
        assert found.status_code == 200 and found.json()["hits"], found.text

    port = _free_port()
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ALERTS)],
        "scrape_configs": [
            {
                "job_name": "docshelf-api",
                "authorization": {"credentials": SCRAPE_TOKEN},  # /metrics is for operators
                "static_configs": [{"targets": [url.split("//")[1]]}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    log = (tmp_path / "prometheus.log").open("w")
    proc = subprocess.Popen(
        [
            prometheus,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    api = f"http://127.0.0.1:{port}/api/v1"

    def query(expr: str) -> dict[str, Any]:
        reply: dict[str, Any] = httpx.get(f"{api}/query", params={"query": expr}).json()
        return reply

    try:
        _wait("Prometheus", lambda: httpx.get(f"http://127.0.0.1:{port}/-/ready").is_success)

        def scraped_twice() -> bool:
            result = query('count_over_time(up{job="docshelf-api"}[1m])')["data"]["result"]
            return bool(result) and float(result[0]["value"][1]) >= 2

        _wait("two scrapes of docshelf serve", scraped_twice)
        assert query('up{job="docshelf-api"}')["data"]["result"][0]["value"][1] == "1"

        failed = {}
        for q in panel_queries() + alert_queries():
            reply = query(q.expr)
            if reply.get("status") != "success":
                failed[q.where] = reply.get("error")
        assert not failed, failed

        # what this run did is there: the pipeline's stages, the searches, the cache hit
        def value(expr: str) -> float:
            result = query(expr)["data"]["result"]
            assert result, f"no data for {expr}"
            return float(result[0]["value"][1])

        assert value('sum(ingest_jobs_total{stage="indexing"})') >= 1
        assert value('sum(search_latency_ms_count{mode="lexical"})') >= 1  # the hit is not timed
        assert value('sum(retrieval_cache_lookups_total{outcome="hit"})') >= 1
        assert value('sum(upload_latency_ms_count{outcome="accepted"})') == 1
        assert value("max(embedding_coverage_ratio)") == 0  # lexical-only: nothing embedded
        assert value('sum(ingest_workers{state="idle"})') == 1
        assert value("time() - max(ingest_worker_heartbeat_timestamp_seconds)") < 30

        # every alert rule evaluated without error (rule health is "ok" once evaluated)
        def evaluated() -> list[dict[str, Any]] | None:
            groups = httpx.get(f"{api}/rules").json()["data"]["groups"]
            rules: list[dict[str, Any]] = [r for g in groups for r in g["rules"]]
            return rules if rules and all(r["health"] != "unknown" for r in rules) else None

        rules = _wait("the alert rules to be evaluated", evaluated)
        assert {r["name"] for r in rules} == {rule["alert"] for rule in alert_rules()}
        unhealthy = {r["name"]: r.get("lastError") for r in rules if r["health"] != "ok"}
        assert not unhealthy, unhealthy
        # a healthy library with a live worker: no alert is even pending
        active = {r["name"]: r["state"] for r in rules if r["state"] != "inactive"}
        assert not active, active
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


# -- docker compose runs the pack ------------------------------------------------------------
def test_the_compose_file_runs_prometheus_and_grafana_with_the_pack() -> None:
    deploy = ROOT / "deploy"
    services = yaml.safe_load((deploy / "docker-compose.yml").read_text())["services"]
    assert {"api", "worker", "prometheus", "grafana"} <= set(services)
    mounted = {
        target: deploy / source
        for name in ("prometheus", "grafana")
        for source, target, *_ in (v.split(":") for v in services[name]["volumes"])
        if source.startswith("./")
    }
    missing_files = [str(p) for p in mounted.values() if not p.exists()]
    assert not missing_files, missing_files
    assert mounted["/etc/prometheus/prometheus.yml"] == PACK / "prometheus.yml"
    assert mounted["/etc/prometheus/alerts.yml"] == ALERTS  # prometheus.yml names it beside it
    assert mounted["/var/lib/grafana/dashboards/ingest-dashboard.json"] == DASHBOARD
    provisioning = yaml.safe_load(
        (PACK / "grafana" / "provisioning" / "dashboards" / "docshelf.yml").read_text()
    )
    assert provisioning["providers"][0]["options"]["path"] == "/var/lib/grafana/dashboards"
    datasource = yaml.safe_load(
        (PACK / "grafana" / "provisioning" / "datasources" / "prometheus.yml").read_text()
    )["datasources"][0]
    assert datasource["type"] == "prometheus" and datasource["url"] == "http://prometheus:9090"
    # Prometheus scrapes the ports the API and the workers listen on
    config = yaml.safe_load((PACK / "prometheus.yml").read_text())
    assert config["rule_files"] == ["alerts.yml"]
    ports = {
        job["job_name"]: (job["dns_sd_configs"][0]["names"], job["dns_sd_configs"][0]["port"])
        for job in config["scrape_configs"]
    }
    api, worker = services["api"]["command"], services["worker"]["command"]
    assert ports["docshelf-api"] == (["api"], int(api[api.index("--port") + 1]))
    assert ports["docshelf-worker"] == (["worker"], int(worker[worker.index("--probe-port") + 1]))
    assert "9108/healthz" in " ".join(services["worker"]["healthcheck"]["test"])
