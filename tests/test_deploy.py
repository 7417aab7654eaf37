"""Deployment docs that cannot go stale: every setting the code reads is in the
configuration reference, the compose file parses and uses only documented
settings, and the links to the docs resolve."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "docs" / "deploy.md"
VARIABLE = re.compile(r"\bDOCSHELF_[A-Z][A-Z0-9_]*\b")


def documented() -> set[str]:
    """The variables in the configuration reference's table rows."""
    text = DEPLOY.read_text(encoding="utf-8")
    reference = text[text.index("## Configuration reference") :]
    return {
        m.group(0)
        for line in reference.splitlines()
        if line.startswith("| `DOCSHELF_")
        for m in [VARIABLE.search(line)]
        if m
    }


def test_every_setting_the_code_reads_is_documented() -> None:
    read = {
        name
        for path in (ROOT / "src" / "docshelf").rglob("*.py")
        for name in VARIABLE.findall(path.read_text(encoding="utf-8"))
    }
    read |= set(VARIABLE.findall((ROOT / "Makefile").read_text(encoding="utf-8")))
    missing = sorted(read - documented())
    assert not missing, f"add these to the configuration reference in docs/deploy.md: {missing}"


def test_the_compose_file_has_the_cluster_and_only_documented_settings() -> None:
    compose = yaml.safe_load((ROOT / "deploy" / "docker-compose.yml").read_text())
    services = compose["services"]
    assert {"postgres", "rabbitmq", "minio", "api", "worker"} <= set(services)
    assert "pgvector" in services["postgres"]["image"]
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["worker"]["command"][:2] == ["docshelf", "worker"]
    api_env = services["api"]["environment"]
    assert api_env["DOCSHELF_WORKERS"] == "0"
    assert api_env["DOCSHELF_DATABASE_URL"].startswith("postgresql://")
    assert api_env["DOCSHELF_QUEUE_URL"].startswith("amqp://")
    assert api_env["DOCSHELF_BLOB_URL"].startswith("s3://")
    used = set(VARIABLE.findall((ROOT / "deploy" / "docker-compose.yml").read_text()))
    assert used <= documented()
    assert (ROOT / services["api"]["build"]["dockerfile"]).exists()  # context: the root


def test_links_to_the_docs_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in re.findall(r"\]\(([^)#\s]+\.md)(?:#[^)]*)?\)", page.read_text("utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken
