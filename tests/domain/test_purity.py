"""The core does no I/O: domain/ imports only the standard library's pure parts,
``returns`` and treadle's own ports and domain (an allow-list, where the import-linter
contract is a deny-list); and no two of its modules import each other, even for types."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.test_packaging import SOURCE_TREE

pytestmark = SOURCE_TREE  # it reads domain/ whole; a test adds a module there for a moment

DOMAIN = Path(__file__).resolve().parents[2] / "domain"
ALLOWED_THIRD_PARTY = {"returns"}
IO_MODULES = {
    "os",
    "io",
    "sys",
    "time",
    "socket",
    "subprocess",
    "shutil",
    "pathlib",
    "signal",
    "threading",
    "multiprocessing",
    "select",
    "selectors",
    "tempfile",
    "builtins",
    "ctypes",
}


def domain_modules() -> dict[str, Path]:
    """Every module of domain/, by its name in the installed package."""
    modules = {}
    for path in sorted(DOMAIN.rglob("*.py")):
        parts = path.relative_to(DOMAIN.parent).with_suffix("").parts
        name = ".".join(("treadle", *parts)).removesuffix(".__init__")
        modules[name] = path
    return modules


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, ``TYPE_CHECKING`` blocks and functions included."""
    modules: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
            # ``from package import module`` imports that module too.
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def test_domain_imports_nothing_but_pure_stdlib_returns_and_treadle_core():
    problems = []
    paths = domain_modules().values()
    assert len(paths) > 20, "the walk must reach every layer of the domain"
    for path in paths:
        for module in imported_modules(path):
            top = module.split(".")[0]
            if module.startswith(("treadle.ports", "treadle.domain")) or top == "__future__":
                continue
            if top in ALLOWED_THIRD_PARTY:
                continue
            if top not in sys.stdlib_module_names or top in IO_MODULES:
                problems.append(f"{path.relative_to(DOMAIN)}: {module}")
    assert problems == []


def import_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One cycle of ``graph`` (module -> modules it imports), or [] when there is none."""
    done: set[str] = set()
    trail: list[str] = []

    def visit(module: str) -> list[str]:
        if module in trail:
            return [*trail[trail.index(module) :], module]
        if module in done:
            return []
        trail.append(module)
        for imported in sorted(graph.get(module, ())):
            cycle = visit(imported)
            if cycle:
                return cycle
        trail.pop()
        done.add(module)
        return []

    for module in sorted(graph):
        cycle = visit(module)
        if cycle:
            return cycle
    return []


def test_the_cycle_finder_sees_a_cycle_through_three_modules():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycle(graph) == ["a", "b", "c", "a"]
    assert import_cycle({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_domain_imports_another_in_a_cycle():
    modules = domain_modules()
    graph = {}
    for name, path in modules.items():
        imported = set()
        for module in imported_modules(path):
            # ``from pkg import mod`` names a module too; a package's own __init__ is not
            # part of a cycle through its modules.
            imported |= {m for m in modules if module == m or module.startswith(m + ".")}
        graph[name] = {m for m in imported if m != name and not name.startswith(m + ".")}
    assert import_cycle(graph) == []
