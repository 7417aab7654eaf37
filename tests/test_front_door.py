"""``Shelf`` is the front door, honestly (shelf.py says what passes through it): the faces
(CLI, HTTP API, MCP, LangChain, the web page, evaluation) call its methods and never
reach into the open library's parts; what they import besides it is the kernel, the
values they name, and the long-running work they host, handed the Shelf."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from docshelf.runtime import OnRuntime
from docshelf.shelf import Parts
from tests.test_layering import LAYERS

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "docshelf"
FACES = ("api", "cli", "integrations", "web", "evaluate")

# What a face reads of the open library's parts (``shelf.Parts``); the others, and the
# runtime, it never touches: it calls the Shelf's methods.
READ = {"settings", "taxonomy", "embedder", "metrics"}
PARTS = {
    name for name, kind in vars(Parts).items() if isinstance(kind, OnRuntime | property)
} - READ | {"runtime", "_sync", "_uploads"}
# Evaluation builds its own libraries and keeps a marker in their store's meta; it is held
# to the first rule only (no ``shelf.runtime``).
PARTS_FOR = {"evaluate": {"runtime"}}

KERNEL = LAYERS[0]  # below everything, holding no library: a face imports it freely
FRONT = ("shelf", "views")

# What else a face may import, as ``module:name`` (``*``: the module). Only ever shrinks:
# an entry no face imports any more fails the test too.
VALUES = {  # a face names them: the filter vocabulary, results, views, parts' settings
    *(
        f"search.filters:{n}"
        for n in (
            "DATE_PATTERN",
            "FILTER_KEYS",
            "SEARCH_MODES",
            "SearchFilters",
            "SearchMode",
            "document_types",
            "file_type_names",
            "meaning",
        )
    ),
    "search.filters_model:Filters",
    "search.results:ContextMode",
    "search.results:MAX_LIMIT",
    "search.results:SearchResult",
    "search.citing:*",  # where a citation points inside its chunk (the reader's view)
    "store:Listing",
    "store:SearchFilters",
    "catalogue:DocumentView",
    "ingest.uploads:UploadResult",
    "ingest.filing:FilingReport",
    "blobs:BlobWriter",
    "chunk:ChunkSettings",
    "knowledge.taxonomy:Taxonomy",
    "embed:Embedder",
}
HOSTED = {  # long-running work a face runs, handed the Shelf, and its settings
    "ingest.worker:Worker",
    "ingest.worker:WorkerPool",
    "ingest.worker:WorkerSettings",
    "ingest.worker_process:NICE",
    "ingest.worker_process:WorkerProcess",
    "ingest.worker_probe:WorkerProbe",
    "ingest.watch:watch",
    "ingest.watch:watch_in_background",
    "ingest.filing:Filing",
    "ingest.filing:watch_inbox",
    "shutdown:run_workers",
    "shutdown:serve",
    "llm.local:*",  # the packaged local model, served by `docshelf llm-serve`
}
READER = {  # the web reader shows a document from its bytes, parsed as it was indexed
    "parse:parse",
    "parse.links:note_name",
    "parse.sandbox:run_limited",
    "ingest.prepare:read_file",
}
ALONE = {  # `migrate` opens the store alone, before any library; evaluation makes the one
    "store:open_store",  # embedder its libraries share
    "embed:make_embedder",
}
ALLOWED = VALUES | HOSTED | READER | ALONE
# Evaluation composes rankings of its own from the stages (evaluate/study.py: the rules
# measured and not kept; evaluate/lists.py: fusion of lists given by hand): the stage API.
STAGE_API = (
    "search.order",
    "search.pipeline",
    "search.candidate",
    "search.evidence",
    "search.query",
    "search.stages",
    "store.base",
)


def _stage_api(module: str, target: str) -> bool:
    return _face(module) == "evaluate" and any(
        target == api or target.startswith(f"{api}.") for api in STAGE_API
    )


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def _face(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in FACES else None


def _trees() -> Iterator[tuple[str, ast.Module]]:
    for module, path in sorted(MODULES.items()):
        if _face(module):
            yield module, ast.parse(path.read_text(encoding="utf-8"))


def imported(tree: ast.Module) -> Iterator[tuple[str, str]]:
    """(docshelf module, name) per name imported anywhere in ``tree`` (at module level,
    in a function or for type checking); ``*`` for a module imported whole."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("docshelf."):
                    yield alias.name.removeprefix("docshelf."), "*"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("docshelf"):
            base = (node.module or "").removeprefix("docshelf").removeprefix(".")
            for alias in node.names:
                whole = f"{base}.{alias.name}".lstrip(".")
                if whole in MODULES:
                    yield whole, "*"
                elif alias.name != "__version__":
                    yield base, alias.name


def _past_the_front_door(target: str) -> bool:
    return bool(target) and not _face(target) and target not in (*KERNEL, *FRONT)


def test_faces_import_only_the_kernel_values_and_hosted_work_past_the_shelf() -> None:
    used: set[str] = set()
    refused = []
    for module, tree in _trees():
        for target, name in imported(tree):
            if not _past_the_front_door(target) or _stage_api(module, target):
                continue
            if f"{target}:{name}" in ALLOWED:
                used.add(f"{target}:{name}")
            else:
                refused.append(f"{module} imports {name} from docshelf.{target}")
    assert not refused, "past the Shelf:\n" + "\n".join(sorted(set(refused)))
    assert used >= ALLOWED, f"allowed but no longer imported: {sorted(ALLOWED - used)}"


def _names_a_shelf(node: ast.expr) -> bool:
    """``shelf``, ``self.shelf``, ``app.state.shelf``, ``run.store_shelf()``, ..."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return "shelf" in node.id.lower()
    return isinstance(node, ast.Attribute) and "shelf" in node.attr.lower()


def reach_throughs(tree: ast.Module, parts: set[str]) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in parts and _names_a_shelf(node.value):
            yield node.lineno, ast.unparse(node)


def test_no_face_reaches_through_the_shelf_into_its_parts() -> None:
    found = [
        f"{module}:{line}: {text}"
        for module, tree in _trees()
        for line, text in reach_throughs(tree, PARTS_FOR.get(_face(module) or "", PARTS))
    ]
    assert not found, "reach-throughs:\n" + "\n".join(found)


def test_the_rules_catch_a_reach_through_and_an_import_past_the_shelf() -> None:
    assert {"store", "blobs", "retriever", "llm", "enricher", "runtime"} <= PARTS
    assert not PARTS & READ
    source = (
        "from docshelf.ingest.uploads import intake_of\n"
        "def f(run, request):\n"
        "    from docshelf import catalogue\n"
        "    run.store_shelf().store.get_meta('x')\n"
        "    intake_of(request.app.state.shelf.runtime)\n"
        "    return run.shelf().settings\n"
    )
    tree = ast.parse(source)
    assert set(imported(tree)) == {("ingest.uploads", "intake_of"), ("catalogue", "*")}
    found = {text for _, text in reach_throughs(tree, PARTS)}
    assert found == {"run.store_shelf().store", "request.app.state.shelf.runtime"}
