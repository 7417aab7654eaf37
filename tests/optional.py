"""Optional test dependencies: skipped with the reason when missing — except under CI,
where a missing one is a failure (CI installs everything the tests need)."""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest


def missing(reason: str) -> NoReturn:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (required under CI=true)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_module(name: str, install: str) -> ModuleType:
    """Import ``name`` or skip (fail under CI), naming what to install."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        missing(f"{name} is not installed ({install}): {exc}")


def require_program(name: str, install: str) -> str:
    """The path of ``name`` on PATH, or skip (fail under CI), naming what to install."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} is not on PATH ({install})")
    return path
