"""The package as it installs: the four folders at the root mapped into one ``treadle``
namespace by setuptools' package-dir, with no symlinks and nothing else importable."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("domain", "ports", "adapters", "entrypoints")
SOURCE_TREE = pytest.mark.xdist_group("source-tree")
"""The tests that add a module to the source folders, or read them whole (a wheel, the
domain's imports): on one pytest-xdist worker, so none sees another's passing module."""


def declared() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools: dict[str, object] = config["tool"]["setuptools"]
    return setuptools


def package_folders() -> set[str]:
    found = {"treadle"}
    for folder in FOLDERS:
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT).parts
            found.add(".".join(("treadle", *parts)))
    return found


def test_every_package_folder_is_declared_and_mapped():
    assert set(declared()["packages"]) == package_folders()  # type: ignore[call-overload]
    mapping = declared()["package-dir"]
    assert mapping == {"treadle": "treadle", **{f"treadle.{f}": f for f in FOLDERS}}


def test_the_repository_holds_no_symlinks():
    tracked = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert [line for line in tracked.splitlines() if line.startswith("120000")] == []


def test_only_the_treadle_namespace_is_importable_from_elsewhere(tmp_path: Path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    probe = (
        "import importlib.util, sys\n"
        "import treadle.domain.loop.turn, treadle.entrypoints.cli\n"
        "print([n for n in ('domain', 'ports', 'adapters', 'entrypoints')"
        " if importlib.util.find_spec(n) is not None])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@SOURCE_TREE
def test_a_module_added_to_a_folder_is_importable_without_reinstalling(tmp_path: Path):
    added = ROOT / "domain" / "rules" / "_added_by_a_test.py"
    added.write_text("ANSWER = 42\n", encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from treadle.domain.rules._added_by_a_test import ANSWER"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
    finally:
        added.unlink()
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
@SOURCE_TREE
def test_the_wheel_holds_the_treadle_namespace_only(tmp_path: Path):
    build = ["wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path)]
    subprocess.run(
        [sys.executable, "-m", "pip", *build, str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("treadle-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.startswith("treadle-")}
    assert tops == {"treadle"}
    assert "treadle/domain/loop/turn.py" in names
    assert "treadle/py.typed" in names
