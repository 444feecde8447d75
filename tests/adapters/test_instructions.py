"""Project instructions are read from real folders: the user's AGENTS.md, then the
project's from its root down to the working folder, CLAUDE.md standing in, capped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from treadle.adapters.instructions import (
    HEADING,
    NOTES_ROOM,
    SEPARATOR,
    ProjectInstructions,
    project_root,
    read_instructions,
)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A repository with a package folder in it, and a user's config folder beside."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    package = repo / "pkg" / "core"
    package.mkdir(parents=True)
    user = tmp_path / "config"
    user.mkdir()
    return {"repo": repo, "pkg": repo / "pkg", "core": package, "user": user}


def read(workspace: Path, user: Path | None = None, limit: int = 32 * 1024) -> ProjectInstructions:
    return read_instructions(str(workspace), user_folder=str(user) if user else None, limit=limit)


def order_of(found: ProjectInstructions) -> list[str]:
    return [os.path.relpath(file.path, found.root) for file in found.files]


def test_files_are_read_from_the_project_root_down_to_the_working_folder(tree) -> None:
    (tree["repo"] / "AGENTS.md").write_text("Use tabs.\n")
    (tree["pkg"] / "AGENTS.md").write_text("Run make check in pkg.\n")
    (tree["core"] / "AGENTS.md").write_text("Core: no new dependencies.\n")
    found = read(tree["core"])
    assert found.root == str(tree["repo"])
    assert order_of(found) == ["AGENTS.md", "pkg/AGENTS.md", "pkg/core/AGENTS.md"]
    # The nearer file comes last, so that it wins; each comes with its path.
    text = found.text
    assert text.index("Use tabs.") < text.index("make check") < text.index("no new dependencies")
    assert f"## {tree['core'] / 'AGENTS.md'}\n\nCore: no new dependencies." in text


def test_the_users_own_file_comes_first(tree) -> None:
    (tree["user"] / "AGENTS.md").write_text("I prefer short answers.\n")
    (tree["repo"] / "AGENTS.md").write_text("Project rules.\n")
    found = read(tree["repo"], tree["user"])
    assert [file.from_user for file in found.files] == [True, False]
    assert found.text.index("short answers") < found.text.index("Project rules")


def test_a_claude_md_stands_in_only_where_a_folder_has_no_agents_md(tree) -> None:
    (tree["repo"] / "CLAUDE.md").write_text("Root via CLAUDE.md.\n")
    (tree["pkg"] / "AGENTS.md").write_text("Pkg via AGENTS.md.\n")
    (tree["pkg"] / "CLAUDE.md").write_text("Pkg via CLAUDE.md: never read.\n")
    found = read(tree["pkg"])
    assert order_of(found) == ["CLAUDE.md", "pkg/AGENTS.md"]
    assert [file.stands_in for file in found.files] == [True, False]
    assert "never read" not in found.text


def overhead(*paths: Path) -> int:
    """What the text sent takes besides the files' own bytes, for files at ``paths``
    read whole, and the room kept for the notes of what the cap leaves out."""
    heads = sum(len(SEPARATOR) * 2 + len(f"## {path}".encode()) for path in paths)
    return len(HEADING.encode()) + heads + NOTES_ROOM


def test_the_cap_keeps_the_first_bytes_and_says_what_was_left_out(tree) -> None:
    first, second = tree["repo"] / "AGENTS.md", tree["pkg"] / "AGENTS.md"
    first.write_text("a" * 60)
    second.write_text("b" * 60)
    (tree["core"] / "AGENTS.md").write_text("c" * 60)
    limit = overhead(first, second) + 60 + 40
    found = read(tree["core"], limit=limit)
    assert [(file.size, file.included) for file in found.files] == [(60, 60), (60, 40), (60, 0)]
    assert found.left_out == 80
    assert found.text.count("a") >= 60 and "b" * 40 in found.text and "b" * 41 not in found.text
    assert "[... 20 bytes of this file left out" in found.text
    assert "[... 1 more instruction file (60 bytes) left out" in found.text
    assert str(tree["core"] / "AGENTS.md") not in found.text
    assert len(found.text.encode()) <= limit
    [notice] = found.notices()
    assert notice.kind == "instructions_cut"
    assert "80 bytes" in notice.text and str(tree["core"] / "AGENTS.md") in notice.text


def test_a_cut_never_splits_a_character(tree) -> None:
    (tree["repo"] / "AGENTS.md").write_text("é" * 10)  # two bytes each
    found = read(tree["repo"], limit=overhead(tree["repo"] / "AGENTS.md") + 5)
    assert found.files[0].included == 4
    assert "éé" in found.text and "\ufffd" not in found.text


@pytest.fixture
def deep(tmp_path: Path) -> Iterator[Path]:
    """A repository of 1,200 nested folders, each with a 2-byte AGENTS.md: the deepest."""
    (tmp_path / ".git").mkdir()
    folder = tmp_path
    for _ in range(1_200):
        folder = folder / "d"
        folder.mkdir()
        (folder / "AGENTS.md").write_text("x\n")
    yield folder
    while folder != tmp_path:  # deeper than shutil.rmtree can go
        (folder / "AGENTS.md").unlink()
        folder.rmdir()
        folder = folder.parent


def test_the_cap_counts_the_paths_of_many_small_files(deep: Path) -> None:
    # Issue 20: 1,200 nested folders each with a 2-byte AGENTS.md sent 1.5 MB of paths
    # with every request, under a cap of 32 KiB, and said nothing.
    found = read(deep)
    assert len(found.files) == 1_200
    assert len(found.text.encode()) <= 32 * 1024
    sent = [file for file in found.files if file.included]
    assert 0 < len(sent) < 1_200
    assert f"[... {1_200 - len(sent):,} more instruction files" in found.text
    [notice] = found.notices()
    assert notice.kind == "instructions_cut" and "more files" in notice.text
    assert len(notice.text) < 1_000


def test_a_limit_smaller_than_the_heading_sends_nothing_and_says_so(tree) -> None:
    (tree["repo"] / "AGENTS.md").write_text("Use tabs.\n")
    found = read(tree["repo"], limit=100)
    assert found.text == "" and found.left_out == 10
    assert [notice.kind for notice in found.notices()] == ["instructions_cut"]


def test_without_git_the_working_folder_is_the_project(tmp_path: Path) -> None:
    above, work = tmp_path / "above", tmp_path / "above" / "work"
    work.mkdir(parents=True)
    (above / "AGENTS.md").write_text("Not this project's.\n")
    (work / "AGENTS.md").write_text("This one.\n")
    assert project_root(str(work)) == str(work.resolve())
    assert order_of(read(work)) == ["AGENTS.md"]


def test_a_worktrees_git_file_marks_the_root_too(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: /elsewhere\n")
    (tmp_path / "sub").mkdir()
    assert project_root(str(tmp_path / "sub")) == str(tmp_path.resolve())


def test_no_file_means_no_text(tree) -> None:
    found = read(tree["core"], tree["user"])
    assert (found.files, found.text, found.notices()) == ((), "", [])


def test_an_empty_file_is_read_but_says_nothing(tree) -> None:
    (tree["repo"] / "AGENTS.md").write_text("\n\n")
    found = read(tree["repo"])
    assert len(found.files) == 1 and found.text == ""


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux's /proc")
def test_an_unreadable_file_is_reported_and_skipped(tree) -> None:
    # Reading /proc/self/mem from its start fails (EIO), for root too.
    (tree["repo"] / "AGENTS.md").symlink_to("/proc/self/mem")
    (tree["pkg"] / "AGENTS.md").write_text("Readable rules.\n")
    found = read(tree["pkg"])
    assert found.files[0].problem and "Readable rules." in found.text
    assert str(tree["repo"] / "AGENTS.md") not in found.text
    assert [notice.kind for notice in found.notices()] == ["instructions_unreadable"]


def test_an_agents_md_that_links_outside_the_project_is_not_read(tree, tmp_path) -> None:
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("-----BEGIN PRIVATE KEY-----\n")
    (tree["repo"] / "AGENTS.md").symlink_to(secret)
    (tree["core"] / "AGENTS.md").symlink_to(tree["repo"] / "README.md")
    (tree["repo"] / "README.md").write_text("Read me.\n")  # a link within is fine
    found = read(tree["core"])
    assert "PRIVATE KEY" not in found.text and "Read me." in found.text
    (refused, *_) = found.notices()
    assert refused.kind == "instructions_unreadable" and "leads outside" in refused.text


def test_a_huge_agents_md_is_read_no_further_than_the_cap(tree) -> None:
    (tree["repo"] / "AGENTS.md").write_bytes(b"x" * (8 << 20))
    found = read(tree["repo"], limit=1024)
    (file,) = found.files
    assert (file.size, file.included) == (8 << 20, 1024 - overhead(tree["repo"] / "AGENTS.md"))
    assert len(found.text.encode()) <= 1024
