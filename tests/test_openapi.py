"""The OpenAPI description is true (issue 17): schemathesis generates requests from
``/openapi.json`` — valid ones and invalid ones — and sends them to a live server over
a real socket; every answer must be one the description declares (status, content
type, headers, body) and none a server error. Examples are bounded to keep this to
about a minute."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from docshelf.api import create_app
from docshelf.shelf import Shelf
from tests.fakes import HashEmbedder
from tests.live_server import serve

EXAMPLES = 20  # per operation and generation mode


@pytest.fixture
def live(isolated_home: Path) -> Iterator[tuple[str, str]]:
    """A server with one user and one document: (base URL, the user's token)."""
    with Shelf(isolated_home, embedder=HashEmbedder()) as shelf:
        user, token = shelf.create_user("alice")
        shelf.upload(user.id, "raft.md", b"# Raft\n\nRaft elects a leader.\n")
        with serve(create_app(shelf)) as url:
            yield url, token


# What the upload accepts depends on the file's name and bytes (a parser must exist for
# its extension, the file must not be empty), which a schema cannot say: schema-valid
# uploads may be refused (400/415), and that check is off for that one operation.
CONTENT_DEPENDENT: dict[str, list[Any]] = {"POST /v1/documents": [positive_data_acceptance]}
# A query value is a string on the wire: a "negative" case of a string array (an integer,
# a boolean, an object for `concept`) arrives as strings the schema allows, so the list's
# many string-array filters leave that check nothing it could catch but false alarms.
CONTENT_DEPENDENT["GET /v1/documents"] = [negative_data_rejection]


def _check(operation: Any, mode: GenerationMode, url: str) -> None:
    excluded = CONTENT_DEPENDENT.get(operation.label, [])

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        case.call_and_validate(base_url=url, timeout=10, excluded_checks=excluded)

    try:
        run()
    except Unsatisfiable:  # nothing to make invalid (an operation without parameters)
        assert mode is GenerationMode.NEGATIVE


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_the_api_answers_as_its_openapi_description_says(
    live: tuple[str, str], mode: GenerationMode
) -> None:
    url, token = live
    # schemathesis signs requests itself (so it knows which ones it sent without a token)
    config = schemathesis.Config.from_dict({"auth": {"openapi": {"HTTPBearer": {"bearer": token}}}})
    loaded = schemathesis.openapi.from_url(f"{url}/openapi.json", config=config)
    schema = loaded.exclude(path="/v1/events")  # never ends by itself: an open stream
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # an Err raises: a broken schema
        operations += 1
        try:
            _check(operation, mode, url)
        except (Exception, BaseExceptionGroup) as exc:  # all of them: one report for the API
            failures.append(f"{operation.label}: {exc}")
    assert operations >= 19
    assert not failures, "\n\n".join(failures)
