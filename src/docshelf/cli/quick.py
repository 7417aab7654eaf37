"""``docshelf search`` (and ``sync``, ``status``) for a program: the JSON envelope
without typer, rich or pydantic.

An agent calling the CLI as a tool, or a script piping its output, pays every import
on every query; typer (with the pydantic adapters it builds per option), click and
rich are ~40% of a lexical search's start-up (BENCHMARKS.md, "A search as a new
process"). :func:`main` recognises the plain shapes of a search whose output is JSON —
``[--home H] [--json] search QUERY [--limit N | -n N] [--mode M] [--filter F]...
[--group G] [--expand E] [--json]``, ``--opt=value`` too — and answers it here; any
other argument line (help, a usage error, a human on a terminal, an unusual spelling)
is left to the typer app, which gives the same envelope for the same search. An
unchanged ``sync`` (``[--home H] [--json] sync [SOURCE] [--json]``) and ``status [--check]``
are answered here too: most of their start-up was typer's.

Both paths run :func:`search_json`: the library's resident helper first
(``cli/resident.py``), then the search in this process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, Protocol

if TYPE_CHECKING:
    from docshelf.config import Settings
    from docshelf.search.results import SearchResult
    from docshelf.shelf import Shelf

# option → the request field it sets (each value one argument; digits only for limit)
_VALUED = {
    "--limit": "limit",
    "-n": "limit",
    "--mode": "mode",
    "--filter": "filters",
    "--group": "group",
    "--expand": "expand",
}
_DEFAULTS: dict[str, Any] = {"limit": 10, "mode": "hybrid", "group": "snippet", "expand": None}


class SearchRequest(NamedTuple):  # not a dataclass: a helped search needs no dataclass
    """The arguments of ``docshelf search``, as the command received them."""

    query: str
    limit: int
    mode: str
    filters: list[str]
    group: str
    expand: str | None


class QuickSearch(NamedTuple):
    home: Path | None
    json: bool  # --json given (stdout not being a terminal also means JSON)
    request: SearchRequest


def _root(argv: list[str], command: str) -> tuple[Path | None, bool, int] | None:
    """The root options before ``command`` (``--home H``, ``--json``): the home, whether
    --json was given, and the index after the command's name; None when ``argv`` is not
    that command with plain root options."""
    try:
        for arg in argv:
            arg.encode()  # a lone surrogate (an argument not in UTF-8): typer's to judge
    except UnicodeEncodeError:
        return None
    home: Path | None = None
    as_json = False
    i = 0
    while i < len(argv) and argv[i] != command:
        arg = argv[i]
        if arg == "--json":
            as_json, i = True, i + 1
            continue
        value, i = _value(argv, i, "--home")
        if value is None:
            return None
        home = Path(value)
    if i >= len(argv):
        return None
    return home, as_json, i + 1


def parse(argv: list[str]) -> QuickSearch | None:
    """The search ``argv`` asks for, when it is one of the plain shapes; None otherwise
    (the typer app then parses it, errors and all)."""
    root = _root(argv, "search")
    if root is None:
        return None
    home, as_json, i = root
    fields: dict[str, Any] = {}
    filters: list[str] = []
    query: str | None = None
    while i < len(argv):
        arg = argv[i]
        if arg == "--json":
            as_json, i = True, i + 1
            continue
        if not arg.startswith("-"):
            if query is not None:
                return None  # a second argument: a usage error, typer's to word
            query, i = arg, i + 1
            continue
        name = arg.split("=", 1)[0] if arg.startswith("--") else arg
        key = _VALUED.get(name)
        if key is None:
            return None
        value, i = _value(argv, i, name)
        if value is None:
            return None
        if key == "filters":
            filters.append(value)
            continue
        if key in fields or (key == "limit" and not (value.isascii() and value.isdigit())):
            return None  # a repeated option or a limit typer would have to judge
        fields[key] = int(value) if key == "limit" else value
    if query is None:
        return None
    values = {**_DEFAULTS, **fields}
    request = SearchRequest(
        query, values["limit"], values["mode"], filters, values["group"], values["expand"]
    )
    return QuickSearch(home, as_json, request)


class QuickSync(NamedTuple):
    home: Path | None
    json: bool
    source: str | None


def parse_sync(argv: list[str]) -> QuickSync | None:
    """``[--home H] [--json] sync [SOURCE] [--json]``; None for anything else (``--progress``
    and a terminal's bars are the typer app's)."""
    root = _root(argv, "sync")
    if root is None:
        return None
    home, as_json, i = root
    source: str | None = None
    for arg in argv[i:]:
        if arg == "--json":
            as_json = True
        elif arg.startswith("-") or source is not None:
            return None
        else:
            source = arg
    return QuickSync(home, as_json, source)


class QuickStatus(NamedTuple):
    home: Path | None
    json: bool
    check: bool


def parse_status(argv: list[str]) -> QuickStatus | None:
    """``[--home H] [--json] status [--check] [--json]``; None for anything else."""
    root = _root(argv, "status")
    if root is None:
        return None
    home, as_json, i = root
    check = False
    for arg in argv[i:]:
        if arg == "--json":
            as_json = True
        elif arg == "--check" and not check:
            check = True
        else:
            return None
    return QuickStatus(home, as_json, check)


def _value(argv: list[str], i: int, name: str) -> tuple[str | None, int]:
    """The value of option ``name`` at ``argv[i]`` (``--name V`` or ``--name=V``) and the
    next index; None when it is not that option or its value is not plain."""
    arg = argv[i]
    if arg == name and i + 1 < len(argv):
        value = argv[i + 1]
        i += 2
    elif name.startswith("--") and arg.startswith(f"{name}="):
        value = arg[len(name) + 1 :]
        i += 1
    else:
        return None, i
    if not value or value.startswith("-"):
        return None, i
    return value, i


class SearchRun(Protocol):
    """What a search needs of its command's run (``command.Run`` or ``QuickRun``)."""

    def settings(self) -> Settings: ...

    def shelf(self, **kwargs: Any) -> Shelf: ...

    def store_shelf(self) -> Shelf: ...

    def cmd(self, rest: str) -> str: ...


def search_json(run: SearchRun, request: SearchRequest) -> tuple[dict[str, Any], list[Action]]:
    """The result (``views.search``) and the next actions of one search: answered by the
    library's resident helper when one is running and trusted, else in this process
    (which then starts a helper, when ``DOCSHELF_SEARCH_HELPER=auto``)."""
    from docshelf.cli import resident

    settings = run.settings()
    helper, absent = resident.policy(settings), False
    if helper != "off":
        reply = resident.ask(settings, request)
        if reply.result is not None:
            return reply.result, _actions(run, reply.result)
        absent = reply.refused == "absent"
    from docshelf import views

    result = views.search(searched(run.shelf(embed_purpose="query"), request))
    if helper == "auto" and absent and resident.SUPPORTED:
        resident.start(settings)  # for the next search
    return result, _actions(run, result)


def searched(shelf: Shelf, request: SearchRequest) -> SearchResult:
    """``request`` searched in ``shelf``. Without ``--filter`` options the filters are
    the empty ones ``Filters`` would give, without loading pydantic for its model."""
    from docshelf.store import SearchFilters

    filters = SearchFilters()
    if request.filters:
        from docshelf.search.filters import Filters

        filters = Filters.parse(request.filters).to_search_filters(shelf.taxonomy)
    return shelf.search(
        request.query,
        limit=request.limit,
        mode=request.mode,
        filters=filters,
        group=request.group,
        expand=request.expand,
    )


class Action(NamedTuple):
    command: str
    description: str


def _actions(run: SearchRun, result: dict[str, Any]) -> list[Action]:
    if not result["hits"]:
        return [Action(run.cmd("status"), "Check what is indexed")]
    top = result["hits"][0]
    return [
        Action(
            run.cmd(f"context {top['chunk_id']} --mode parent-section"),
            "Read the section around the top hit",
        ),
        Action(run.cmd(f"show {top['document_id']}"), "Show the top hit's document"),
    ]


class QuickRun:
    """A search's run without typer: the settings, the shelf (opened on first use)."""

    def __init__(self, home: Path | None) -> None:
        self.home = home
        self._settings: Settings | None = None
        self._shelf: Shelf | None = None

    def settings(self) -> Settings:
        if self._settings is None:
            from docshelf.config import Settings

            self._settings = Settings.from_env(self.home)
        return self._settings

    def shelf(self, **kwargs: Any) -> Shelf:
        if self._shelf is None:
            from docshelf.shelf import Shelf
            from docshelf.telemetry import stop_recording_metrics

            stop_recording_metrics()  # nothing scrapes a one-shot process
            self._shelf = Shelf(settings=self.settings(), **kwargs)
        return self._shelf

    def store_shelf(self) -> Shelf:
        """A shelf for commands that never embed: no model is bound or checked."""
        return self.shelf(embedder=None, check_model=False)

    def cmd(self, rest: str) -> str:
        """A command line to suggest, with this run's ``--home`` (as ``command.Run``)."""
        import shlex

        home = self.home
        return f"docshelf --home {shlex.quote(str(home))} {rest}" if home else f"docshelf {rest}"

    def close(self) -> None:
        if self._shelf is not None:
            self._shelf.close()


def main(argv: list[str]) -> bool:
    """Answer ``argv`` if it is a search (or a sync) whose output is JSON; False to leave
    it to the typer app. Prints the envelope as ``command.Run`` does; exits 1 on a
    docshelf error, with the error envelope."""
    found = parse(argv) or parse_sync(argv) or parse_status(argv)
    if found is None or not (found.json or not sys.stdout.isatty()):
        return False
    from docshelf.errors import DocshelfError

    name = {QuickSearch: "search", QuickSync: "sync", QuickStatus: "status"}[type(found)]
    run = QuickRun(found.home)
    try:
        if isinstance(found, QuickSearch):
            result, actions = search_json(run, found.request)
        elif isinstance(found, QuickSync):
            result, actions = sync_json(run, found.source)
        else:
            result, actions = status_json(run, found.check)
    except DocshelfError as exc:
        _fail(name, exc.code, exc.message)
    except KeyboardInterrupt:
        _fail(name, "interrupted", "Interrupted; committed work is kept, run the command again")
    finally:
        run.close()
    envelope = {
        "ok": True,
        "command": name,
        "result": result,
        "next_actions": [a._asdict() for a in actions],
        "error": None,
    }
    sys.stdout.write(json.dumps(envelope, ensure_ascii=False) + "\n")
    sys.stdout.flush()
    return True


def sync_json(run: QuickRun, source: str | None) -> tuple[dict[str, Any], list[Action]]:
    """``docshelf sync`` as ``cli/library.py`` runs it without progress."""
    from docshelf import views

    report = run.shelf().sync(source, progress=None)
    return views.report(report), [Action(run.cmd("status"), "See the library's state")]


def status_json(run: SearchRun, check: bool) -> tuple[dict[str, Any], list[Action]]:
    """``docshelf status``: counts, failures (all of them), embedding coverage, and with
    ``check`` the integrity check's problems."""
    from docshelf import views

    shelf = run.store_shelf()
    st = shelf.status()
    actions = [Action(run.cmd("sync"), "Pick up changes in the registered sources")]
    if st.enrichment.get("pending"):
        actions.append(Action(run.cmd("enrich --all"), "Enrich the documents still pending"))
    if st.documents == 0:
        actions = [Action(run.cmd("add PATH"), "Index a file or folder")]
    result = views.status(st, shelf.check() if check else None)
    # The status holds the first failures; the command lists them all, as it counts them.
    if st.failure_count > len(st.failures):
        every = shelf.store.list_failures(limit=st.failure_count)
        result["failures"] = [{"path": f.path, "reason": f.reason} for f in every]
    if st.by_status.get("failed"):  # documents whose processing failed count as failures too
        for doc in shelf.documents():
            if doc.status == "failed":
                name, reason = _failed_job(shelf, doc.id)
                result["failures"].append({"path": name or doc.path, "reason": reason})
    return result, actions


def _failed_job(shelf: Shelf, document_id: str) -> tuple[str | None, str]:
    """An upload's name and why its processing failed (its job's last error)."""
    from docshelf.errors import NotFound

    try:
        job = shelf.job(document_id)
    except NotFound:
        return None, "processing failed"
    return job.name, job.last_error or "processing failed"


def _fail(command: str, code: str, message: str) -> NoReturn:
    error = {"code": code, "message": message}
    envelope = {"ok": False, "command": command, "result": None, "next_actions": []}
    sys.stdout.write(json.dumps({**envelope, "error": error}, ensure_ascii=False) + "\n")
    raise SystemExit(1)
