"""The entrypoints' imports: at the top of each module, or late in a place listed with
its reason (the circle among them is the import-linter contract's to forbid)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from treadle.entrypoints import LAZY_IMPORTS

ENTRYPOINTS = Path(__file__).resolve().parents[2] / "entrypoints"


def late_imports(tree: ast.AST, inside: bool = False) -> Iterator[tuple[int, str]]:
    """Each import inside a function: its line and the module it imports."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue  # names for the type checker only: never run
        if inside and isinstance(node, ast.ImportFrom) and node.module:
            yield node.lineno, node.module
        if inside and isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        nested = inside or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        yield from late_imports(node, nested)


def listed(importer: str, module: str) -> bool:
    return any(
        who == importer and (what in ("*", module) or module.startswith(what + "."))
        for who, what in LAZY_IMPORTS
    )


def test_every_function_level_import_of_the_entrypoints_is_listed_with_its_reason() -> None:
    unlisted = [
        f"{path.name}:{line} {module}"
        for path in sorted(ENTRYPOINTS.glob("*.py"))
        for line, module in late_imports(ast.parse(path.read_text(encoding="utf-8")))
        if not listed(path.stem, module)
    ]
    assert unlisted == []


def test_the_list_names_no_import_that_is_not_late_any_more() -> None:
    late = {
        (path.stem, module)
        for path in ENTRYPOINTS.glob("*.py")
        for _, module in late_imports(ast.parse(path.read_text(encoding="utf-8")))
    }
    stale = [
        (who, what)
        for who, what in LAZY_IMPORTS
        if not any(
            w == who and (what == "*" or m == what or m.startswith(what + ".")) for w, m in late
        )
    ]
    assert stale == []
