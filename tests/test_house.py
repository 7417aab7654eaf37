"""The house's figures (issue 35): no class over 400 lines, no module over 600 outside the
schema files, no function over 60 lines in the search package. They had slipped once
unnoticed; this holds them."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "docshelf"
SCHEMAS = {"sqlite_schema.py", "postgres_schema.py"}


def _sizes() -> tuple[list[str], list[str], list[str]]:
    modules, classes, functions = [], [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        name = path.relative_to(PACKAGE)
        if text.count("\n") > 600 and path.name not in SCHEMAS:
            modules.append(f"{name}: {text.count(chr(10))} lines")
        searching = name.parts[0] == "search"
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and _lines(node) > 400:
                classes.append(f"{name}:{node.name}: {_lines(node)} lines")
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and searching
                and _lines(node) > 60
            ):
                functions.append(f"{name}:{node.name}: {_lines(node)} lines")
    return modules, classes, functions


def _lines(node: ast.stmt) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def test_modules_classes_and_search_functions_stay_small() -> None:
    modules, classes, functions = _sizes()
    assert not modules, "modules over 600 lines:\n" + "\n".join(modules)
    assert not classes, "classes over 400 lines:\n" + "\n".join(classes)
    assert not functions, "functions over 60 lines in search/:\n" + "\n".join(functions)
