"""The core does no I/O: domain/ imports only the standard library's pure parts,
``returns`` and treadle's own ports and domain (an allow-list, where the import-linter
contract is a deny-list); and no two of its modules import each other, even for types."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

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

