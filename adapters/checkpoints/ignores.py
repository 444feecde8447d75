"""What the workspace's ignore rules may leave out of a checkpoint, and what they may not.

The workspace's ``.gitignore`` files say what is not worth recording (build output,
caches), but a turn writes them as it writes any file: a ``.gitignore`` of ``*`` must
not make the files already recorded look deleted, nor hide what the turn made, nor
hide itself from undo. So the rules are the workspace's, within these bounds:

- a file already recorded stays recorded whatever the rules say now (git updates a
  tracked file whatever ignores it);
- every ``.gitignore`` git reads is recorded, ignored or not;
- a new file the rules now ignore is recorded all the same, unless the rules of the
  latest checkpoint ignored it too: a rule takes effect from the checkpoint after the
  one that recorded it, so a turn's own rules never hide that turn's files;
- what is left out is named (the checkpoint keeps the list, so it is named once).

Example::

    hidden = hidden_by_rules(git, latest.tree, rules_folder, is_own)
    hidden.kept      # ('.gitignore', 'notes.txt'): recorded all the same
    hidden.left_out  # ('build/',): ignored before the turn too
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from treadle.adapters.checkpoints.git import ShadowGit

GITIGNORE = ".gitignore"
_IGNORED = ("ls-files", "-z", "--others", "--ignored", "--exclude-standard")


@dataclass(frozen=True, slots=True)
class Hidden:
    kept: tuple[str, ...]
    """Files an ignore rule hides now, recorded all the same."""
    left_out: tuple[str, ...]
    """What an ignore rule leaves out, as the rules stood before (folders end in ``/``)."""


def hidden_by_rules(
    git: ShadowGit,
    rules_tree: str | None,
    rules_folder: str,
    skip: Callable[[str], bool],
    max_files: int,
) -> Hidden | None:
    """What the workspace's ignore rules hide now, split into what is recorded all the
    same and what is left out, judged by the ``.gitignore`` files of ``rules_tree`` (the
    latest checkpoint's tree; None: the first checkpoint, judged by today's rules).
    ``skip`` names what is not for the rules to decide (treadle's own folders). None
    past ``max_files`` files to record all the same."""
    entries = _unique(p for p in git.paths(*_IGNORED, "--directory") if not skip(p))
    kept = [p for p in entries if _is_gitignore(p)]
    rest = [p for p in entries if not _is_gitignore(p)]
    if rules_tree is None or not rest:
        return Hidden(tuple(kept), tuple(rest))
    rules = _rules_of(git, rules_tree, rules_folder)
    before = _ignored_by(git, rules, rest)
    left_out = [p for p in rest if p in before]
    # Hidden only by rules written since: what is in them is the turn's, recorded.
    newly = [p for p in rest if p not in before]
    folders = [p for p in newly if p.endswith("/")]
    files = [p for p in newly if not p.endswith("/")]
    for chunk in _chunks(folders, 500):
        files += (p for p in git.paths(*_IGNORED, "--", *chunk) if not skip(p))
        if len(files) > max_files:
            return None
    files = _unique(files)
    before = _ignored_by(git, rules, files)
    for path in files:
        if path.endswith("/") or (
            path in before and not _is_gitignore(path)
        ):  # a repository of its own: recorded by nobody
            left_out.append(path)
        else:
            kept.append(path)
    return Hidden(tuple(kept), tuple(left_out))


def _is_gitignore(path: str) -> bool:
    return path.rsplit("/", 1)[-1] == GITIGNORE


def _unique(paths: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(paths))


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    return (items[i : i + size] for i in range(0, len(items), size))


def _rules_of(git: ShadowGit, tree: str, folder: str) -> str:
    """A folder holding only the ``.gitignore`` files of ``tree``, where they were:
    a work tree on which git reads the rules as they stood (made once per tree)."""
    marker = folder + ".tree"
    try:
        with open(marker) as handle:
            if handle.read() == tree:
                return folder
    except OSError:
        pass
    with contextlib.suppress(FileNotFoundError):  # no marker on a half-made folder
        os.unlink(marker)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    listed = git("ls-tree", "-r", "-z", "--full-tree", tree).split(b"\0")
    blobs: list[tuple[str, str]] = []
    for line in listed:
        info, _, raw = line.partition(b"\t")
        path = os.fsdecode(raw)
        fields = info.split()
        if _is_gitignore(path) and fields[:2] in ([b"100644", b"blob"], [b"100755", b"blob"]):
            blobs.append((path, fields[2].decode()))
    if blobs:
        batch = git("cat-file", "--batch", stdin="".join(f"{sha}\n" for _, sha in blobs).encode())
        at = 0
        for path, _ in blobs:
            header_end = batch.index(b"\n", at)
            size = int(batch[at:header_end].split()[2])
            content = batch[header_end + 1 : header_end + 1 + size]
            at = header_end + 1 + size + 1
            target = os.path.join(folder, path)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as handle:
                handle.write(content)
    with open(marker, "w") as handle:
        handle.write(tree)
    return folder


def _ignored_by(git: ShadowGit, rules: str, paths: Sequence[str]) -> set[str]:
    """Those of ``paths`` the rules in the folder ``rules`` ignore."""
    if not paths:
        return set()
    # check-ignore takes no literal pathspecs: "./" keeps a name like ":x" a name.
    out = git(
        "check-ignore", "--no-index", "-z", "--stdin",
        stdin=b"".join(b"./" + os.fsencode(p) + b"\0" for p in paths),
        ok=(0, 1),
        work_tree=rules,
        literal=False,
    )  # fmt: skip
    return {os.fsdecode(p).removeprefix("./") for p in out.split(b"\0") if p}
