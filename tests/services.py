"""Real services for tests: their URLs come from the environment.

Absent, the tests that need them are skipped with the reason — except under
CI=true, where a missing service is a failure (CI must run them).
"""

from __future__ import annotations

import os

import pytest


def service_url(variable: str, what: str) -> str:
    url = os.environ.get(variable)
    if url:
        return url
    if os.environ.get("CI") == "true":
        pytest.fail(f"{variable} is not set: under CI=true the {what} tests must run")
    pytest.skip(f"{what} not configured: set {variable} to run these tests")
