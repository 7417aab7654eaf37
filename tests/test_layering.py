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
        "telemetry",
        "progress",
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
    ("ingest", "knowledge", "portable", "catalogue", "runtime"),
    ("shelf", "views", "shutdown"),
    ("api", "cli", "integrations", "evaluate", "web", ""),  # "" is docshelf/__init__
]

# (importer, imported) pairs allowed upward under TYPE_CHECKING only.
TYPE_ONLY_UPWARD: set[tuple[str, str]] = set()


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


def test_no_import_circles_between_modules() -> None:
    """Module-level imports that run form no cycle (a cycle makes import order matter)."""
    graph = {
        m: {i for i, typing_only, top in imports(m) if top and not typing_only} for m in MODULES
    }
    cycles: list[list[str]] = []
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
                cycles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert not cycles, "import circles:\n" + "\n".join(" -> ".join(c) for c in cycles)


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
