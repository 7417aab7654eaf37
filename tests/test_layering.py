"""The house's layering: a module may import its own layer or the ones below, never above,
and no two modules import each other in a circle.

The layers follow the flow (docs/architecture.md): the kernel (errors, settings, the
data model); the ports and pure stages (parse, chunk, embed, store, ...); search; the
work that uses them (ingest, knowledge, portable) with the wiring that builds it and is
handed to it (runtime); the facade (shelf) and what renders it; the faces (CLI, HTTP,
MCP, LangChain, evaluation).

Imports under ``if TYPE_CHECKING:`` are for annotations only and never run; they are
held to the same rule, except the few listed in ``TYPE_ONLY_UPWARD`` (parts that are
handed the wiring and name its type). That list may only shrink.

Circles are counted over every import: at module level, inside a function (made on
first use), and under ``TYPE_CHECKING``. A lazy or type-only import hides a circle from
the interpreter, not from the reader: the two modules still cannot be understood (or
moved) one without the other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "docshelf"

# Lowest first. A module belongs to the longest prefix listed for it.
LAYERS: list[tuple[str, ...]] = [
    (
        "errors",
        "config",
        "model",
        "durable",
        "backoff",
        "terminal",
        "plaintext",
        "wording",
        "telemetry",
        "progress",
        "owners",
        "failures",
    ),
    (
        "parse",
        "chunk",
        "embed",
        "llm",
        "rerank",
        "blobs",
        "transport",
        "store",
        "shared",
        "accounts",
        "knowledge.taxonomy",
    ),
    ("search",),
    # the work, and the wiring that builds it and is handed to it (a part names the
    # Runtime's type; the Runtime builds the parts)
    ("ingest", "knowledge", "portable", "catalogue", "notebooks", "runtime"),
    ("shelf", "shelf_accounts", "shelf_asking", "views", "shutdown"),
    ("api", "cli", "integrations", "evaluate", "web", ""),  # "" is docshelf/__init__
]

# (importer, imported) pairs allowed upward under TYPE_CHECKING only.
TYPE_ONLY_UPWARD: set[tuple[str, str]] = set()

# Circles known today. This set may only shrink (it is empty): a circle not listed fails
# the test, and so does a listed one that is gone.
KNOWN_CIRCLES: set[frozenset[str]] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> int:
    rest = module.removeprefix("docshelf").removeprefix(".")
    best, best_len = None, -1
    for level, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            matches = rest == prefix or (prefix != "" and rest.startswith(prefix + "."))
            if matches and len(prefix) > best_len:
                best, best_len = level, len(prefix)
    assert best is not None, f"{module} is in no layer: add it to LAYERS"
    return best


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                for sub in ast.walk(child):
                    if hasattr(sub, "lineno"):
                        lines.add(sub.lineno)
    return lines


def imports(module: str, source: str | None = None) -> Iterator[tuple[str, bool, bool]]:
    """(imported docshelf module, only for type checking, at module level) per import."""
    path = MODULES[module]
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    typing_only = _type_checking_lines(tree)
    top_level = {id(n) for n in tree.body}
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            for alias in node.names:
                if alias.name == "__version__":
                    continue
                full = f"{base}.{alias.name}"
                names.append(full if full in MODULES else base)
        else:
            continue
        level = node.lineno in typing_only
        for name in names:
            while name and name not in MODULES:
                name = name.rpartition(".")[0]
            if name.startswith("docshelf") and name != module:
                yield name, level, id(node) in top_level


def test_every_module_is_in_a_layer() -> None:
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = []
    for module in sorted(MODULES):
        for imported, typing_only, _ in imports(module):
            if layer_of(imported) <= layer_of(module):
                continue
            if typing_only and (module, imported) in TYPE_ONLY_UPWARD:
                continue
            kind = "type-only " if typing_only else ""
            upward.append(f"{module} -> {kind}{imported}")
    assert not upward, "upward imports:\n" + "\n".join(sorted(set(upward)))


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (module -> the modules it imports), each as the
    path that closes it (``[a, b, a]``); one per back edge of a depth-first walk."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # a package's __init__ importing its own submodules is how packages export
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                found.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return found


def test_no_import_circles_between_modules() -> None:
    """Every import counts (module level, lazy, type-only): no two modules lean on each
    other, however the interpreter would get by."""
    graph = {m: {i for i, _, _ in imports(m)} for m in MODULES}
    found = {frozenset(c): c for c in circles(graph)}
    new = [" -> ".join(c) for members, c in found.items() if members not in KNOWN_CIRCLES]
    assert not new, "import circles:\n" + "\n".join(new)
    gone = [sorted(c) for c in KNOWN_CIRCLES if c not in found]
    assert not gone, f"no longer circles, take them off KNOWN_CIRCLES: {gone}"


def test_the_layering_rule_catches_an_upward_import() -> None:
    """The rule itself: a store module importing the facade (lazily, in a function, or
    relatively) is found, and so is a type-only one."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from docshelf.search.retriever import Retriever\n"
        "def f():\n    from ..shelf import Shelf\n"
    )
    found = {(i, t) for i, t, _ in imports("docshelf.store.sqlite", source)}
    assert found == {("docshelf.search.retriever", True), ("docshelf.shelf", False)}
    assert all(layer_of(i) > layer_of("docshelf.store.sqlite") for i, _ in found)
    assert layer_of("docshelf.store.sqlite") < layer_of("docshelf.shelf")
    assert layer_of("docshelf.knowledge.taxonomy") < layer_of("docshelf.search.filters")
    assert layer_of("docshelf.knowledge.answer") > layer_of("docshelf.search.retriever")


def test_the_circle_rule_catches_a_lazy_or_type_only_circle() -> None:
    """The rule itself: a circle closed by an import inside a function, or by one under
    ``TYPE_CHECKING``, is found; a package importing its own submodules is not one."""
    lazy = "def f():\n    from docshelf.runtime import Runtime\n"
    typed = (
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from docshelf import runtime\n"
    )
    for source in (lazy, typed):
        found = {i for i, _, top in imports("docshelf.ingest.sync", source) if not top}
        assert found == {"docshelf.runtime"}
        graph = {
            "docshelf.ingest.sync": found,
            "docshelf.runtime": {"docshelf.ingest.sync"},
            "docshelf.chunk": {"docshelf.chunk.pack"},  # exporting its own submodule
            "docshelf.chunk.pack": {"docshelf.chunk"},
        }
        assert circles(graph) == [
            ["docshelf.ingest.sync", "docshelf.runtime", "docshelf.ingest.sync"]
        ]
