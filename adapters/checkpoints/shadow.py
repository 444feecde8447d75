"""Checkpoints of a workspace in a shadow git repository: record, diff, undo, redo.

The record lives in treadle's state folder, in a repository of its own
(``<folder>/shadow.git``) with a private index (``<folder>/index``); the workspace is
only its work tree, so changes made by commands count as much as the file tools'. The
user's repository is never written: no commit, ref, stash or index change there (its
``.git`` is not even part of the work tree).

Example::

    shadow = ShadowRepository("/src/app", "/home/me/.local/state/treadle/checkpoints/ab12")
    shadow.record(session="20250101-120000-abc123", task="fix the tests")
    ...                             # the turn edits, creates and deletes files
    shadow.changes()                # Success(Changes(...)): what changed since
    shadow.undo()                   # Success(Restored(...)): as it was before the turn
    shadow.redo()                   # the undo taken back

A checkpoint is a root commit (no parent) under ``refs/treadle/checkpoints/NNNNNN``;
dropping old refs makes their objects prunable. An undo moves the checkpoint it went
back to under ``refs/treadle/undone/`` (so a second undo goes one turn further back)
and keeps the state it replaced under ``refs/treadle/redo/``.
"""

from __future__ import annotations

import dataclasses
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

from returns.result import Failure, Result, Success

from treadle.adapters.checkpoints.git import GitError, ShadowGit, literal_pattern
from treadle.adapters.checkpoints.ignores import hidden_by_rules
from treadle.adapters.checkpoints.manifest import Manifest, user_repository_state

IGNORED_KEPT = 1_000
"""Entries an ignore rule left out that a checkpoint lists (to name only new ones)."""
CHECKPOINTS = "refs/treadle/checkpoints/"
UNDONE = "refs/treadle/undone/"
REDO = "refs/treadle/redo/"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class CheckpointLimits:
    max_file_bytes: int = 5 << 20
    """Larger files are left out of a checkpoint (and so out of undo), with a notice."""
    max_files: int = 50_000
    """A workspace with more files than this (not ignored) is not recorded, with a notice."""
    keep: int = 50
    """Checkpoints kept; older ones (and what only they held) are pruned."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One recorded state of the workspace; ``notices`` say what it left out."""

    number: int
    commit: str
    tree: str
    manifest: Manifest
    notices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed since ``since``: git's summary and patch of it ("" when nothing)."""

    since: Checkpoint
    text: str


@dataclass(frozen=True, slots=True)
class Restored:
    """An undo (or a redo) done: the workspace is as it was at ``to``."""

    to: Checkpoint
    restored: tuple[str, ...]
    """Files written back: edited or deleted since, or replaced by another kind of file."""
    removed: tuple[str, ...]
    """Files made since, and folders made since and left empty (these end in ``/``)."""
    notices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Snapshot:
    tree: str
    manifest: Manifest
    notices: tuple[str, ...]


class ShadowRepository:
    """The checkpoints of ``workspace``, kept in ``folder``.

    ``own_folders`` are treadle's own (sessions, caches): never recorded, nor restored,
    should they lie inside the workspace.
    """

    def __init__(
        self,
        workspace: str,
        folder: str,
        *,
        limits: CheckpointLimits | None = None,
        own_folders: Sequence[str] = (),
    ) -> None:
        self.workspace = os.path.realpath(workspace)
        self.folder = os.path.abspath(folder)
        self.limits = limits or CheckpointLimits()
        self.git = ShadowGit(
            os.path.join(self.folder, "shadow.git"),
            self.workspace,
            os.path.join(self.folder, "index"),
            os.path.join(self.folder, "empty-home"),
        )
        inside = [os.path.realpath(p) for p in (self.folder, *own_folders)]
        self._own = sorted(
            {
                os.path.relpath(p, self.workspace)
                for p in inside
                if p.startswith(self.workspace + os.sep)
            }
        )

    # Recording ------------------------------------------------------------------

    def record(self, *, session: str = "", task: str = "") -> Result[Checkpoint, str]:
        """Record the workspace as it is now, as the checkpoint before a turn."""

        def record() -> Result[Checkpoint, str]:
            self.git.ensure()
            match self._snapshot():
                case Failure() as skipped:
                    return skipped
                case Success(snapshot):
                    pass
            manifest = dataclasses.replace(
                snapshot.manifest, session=session, task=task, created=time.time()
            )
            refs = self._refs()
            number = _next_number(refs)
            commit = self._commit(snapshot.tree, manifest)
            ref = f"{CHECKPOINTS}{number:06d}"
            redo = [r for r in refs if r.startswith(REDO)]  # a new turn: no redo past it
            self._update_refs([(ref, commit)], redo)
            self._prune_old([*(r for r in refs if r not in redo), ref])
            return Success(Checkpoint(number, commit, snapshot.tree, manifest, snapshot.notices))

        return self._attempt(record)

    def _snapshot(self) -> Result[_Snapshot, str]:
        """Bring the private index to the workspace's state and write its tree.

        The workspace's ignore rules leave out new files only as far as
        ``ignores.py`` says: what is recorded stays, every ``.gitignore`` is recorded,
        and a rule counts from the checkpoint after the one that recorded it."""
        self._write_excludes(())
        candidates = self._candidates()
        latest = self._read(CHECKPOINTS)[-1:]
        hidden = hidden_by_rules(
            self.git,
            latest[0].tree if latest else None,
            os.path.join(self.folder, "rules"),
            self._is_own,
            self.limits.max_files,
        )
        if (
            candidates is None
            or hidden is None
            or (len(candidates) + len(hidden.kept) > self.limits.max_files)
        ):
            return Failure(
                f"no checkpoint: more than {self.limits.max_files:,} files (not ignored) in "
                f"{self.workspace}, so this turn cannot be undone"
            )
        large: list[str] = []
        nested: list[str] = []
        modes: dict[str, int] = {}
        for path in [*candidates, *hidden.kept]:
            if path.endswith("/"):  # a repository of its own, or a submodule
                nested.append(path.rstrip("/"))
                continue
            try:
                info = os.lstat(os.path.join(self.workspace, path))
            except OSError:
                continue  # gone since: `add --all` records that
            if stat.S_ISREG(info.st_mode):
                if info.st_size > self.limits.max_file_bytes:
                    large.append(path)
                elif stat.S_IMODE(info.st_mode) not in (0o644, 0o755):
                    modes[path] = stat.S_IMODE(info.st_mode)
        notices = []
        if nested:
            notices.append(f"not recorded (a repository of its own): {_some(nested)}")
        if large:
            limit = f"{self.limits.max_file_bytes / (1 << 20):g} MiB"
            notices.append(f"not recorded (over {limit}), so undo leaves them: {_some(large)}")
        said = set(latest[0].manifest.ignored) if latest else set()
        unsaid = [p for p in hidden.left_out if p not in said]
        if unsaid:
            notices.append(
                f"not recorded (an ignore rule of the workspace leaves them out), so undo "
                f"leaves them: {_some(unsaid)}"
            )
        self._write_excludes([*nested, *large])
        # What the index still holds but must not any more: large, nested or treadle's.
        # Whatever the workspace's ignore rules say, what is recorded stays recorded.
        dropped = {*large, *nested}
        if self._own:
            dropped |= {p for p in self.git.paths("ls-files", "-z", "--cached") if self._is_own(p)}
        if dropped:
            self.git(
                "rm", "--cached", "--force", "-r", "-q", "--ignore-unmatch",
                "--pathspec-from-file=-", "--pathspec-file-nul",
                stdin=b"".join(os.fsencode(p) + b"\0" for p in sorted(dropped)),
            )  # fmt: skip
        self.git("add", "--all", "--ignore-errors", ".", ok=(0, 1))
        unreadable = [
            line for line in self.git.stderr.decode(errors="replace").splitlines() if line
        ]
        kept = [p for p in hidden.kept if p not in large and not p.endswith("/")]
        if kept:  # hidden by a rule the checkpoint before did not have: recorded
            self.git(
                "add", "--force", "--ignore-errors",
                "--pathspec-from-file=-", "--pathspec-file-nul",
                stdin=b"".join(os.fsencode(p) + b"\0" for p in kept), ok=(0, 1),
            )  # fmt: skip
            unreadable += [
                line for line in self.git.stderr.decode(errors="replace").splitlines() if line
            ]
        if unreadable:
            notices.append("not recorded: " + "; ".join(unreadable[:5]))
        tree = self.git("write-tree").decode().strip()
        manifest = Manifest(
            empty_dirs=tuple(self._empty_dirs()),
            modes=tuple(sorted(modes.items())),
            skipped_large=tuple(large),
            skipped_nested=tuple(nested),
            ignored=tuple(hidden.left_out[:IGNORED_KEPT]),
            user_git=user_repository_state(self.workspace),
        )
        return Success(_Snapshot(tree, manifest, tuple(notices)))

    def _is_own(self, path: str) -> bool:
        """Whether ``path`` (a folder ends in ``/``) is or holds treadle's own folders."""
        path = path.rstrip("/")
        return any(
            path == own or path.startswith(own + "/") or own.startswith(path + "/")
            for own in self._own
        )

    def _candidates(self) -> list[str] | None:
        """What git would record (tracked and untracked files, not ignored); None past
        ``max_files``, found without listing the rest of a huge tree."""
        paths: list[str] = []
        listing = ("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--deduplicate")
        for path in self.git.paths(*listing):
            paths.append(path)
            if len(paths) > self.limits.max_files:
                return None
        return paths

    def _write_excludes(self, skipped: Iterable[str]) -> None:
        """``info/exclude``: the user's own ``.git/info/exclude`` (read, never written),
        the user's ``.git`` itself, treadle's folders and this checkpoint's skipped
        paths. The workspace's ``.gitignore`` files (nested too) apply by themselves."""
        lines = ["# written by treadle", ".git"]  # git skips .git itself; this says so twice
        user_exclude = os.path.join(self.workspace, ".git", "info", "exclude")
        if os.path.isfile(user_exclude):
            with open(user_exclude, encoding="utf-8", errors="replace") as handle:
                lines += [line.rstrip("\n") for line in handle]
        lines += [literal_pattern(path) + "/" for path in self._own]
        lines += [literal_pattern(path) for path in skipped]
        with open(os.path.join(self.git.git_dir, "info", "exclude"), "w") as handle:
            handle.write("\n".join(lines) + "\n")

    def _empty_dirs(self) -> list[str]:
        """Folders that hold no recorded file (git keeps none): listed, so that undo
        brings them back, and knows not to remove them."""
        found: list[str] = []
        listing = ("ls-files", "-z", "--others", "--directory", "--exclude-standard")
        for entry in self.git.paths(*listing):
            if not entry.endswith("/"):
                continue
            found.append(entry.rstrip("/"))
            top = os.path.join(self.workspace, entry)
            for root, folders, _ in _bounded_walk(top, 1_000):
                found += [os.path.relpath(os.path.join(root, f), self.workspace) for f in folders]
        return sorted(set(found))

    def _commit(self, tree: str, manifest: Manifest) -> str:
        # The manifest is the message, on stdin: one argument may not pass 128 KiB, and a
        # tree of many empty folders or files of odd modes has a manifest larger than that.
        message = manifest.to_json().encode()
        return self.git("commit-tree", tree, "-F", "-", stdin=message).decode().strip()

    # Reading --------------------------------------------------------------------

    def checkpoints(self) -> list[Checkpoint]:
        """The checkpoints not undone, oldest first."""
        return self._attempt(lambda: Success(self._read(CHECKPOINTS))).value_or([])

    def _read(self, prefix: str) -> list[Checkpoint]:
        if not os.path.isdir(self.git.git_dir):
            return []
        out = self.git(
            "for-each-ref",
            "--sort=refname",
            "--format=%(refname)%00%(objectname)%00%(tree)%00%(contents)%00",
            prefix,
        )
        fields = out.decode(errors="replace").split("\0")
        return [
            Checkpoint(
                _number(fields[i].strip()),
                fields[i + 1],
                fields[i + 2],
                Manifest.from_json(fields[i + 3]),
            )
            for i in range(0, len(fields) - 3, 4)
        ]

    def changes(self) -> Result[Changes, str]:
        """What changed in the workspace since the latest checkpoint (before the last
        turn): git's summary, then the patch."""

        def changes() -> Result[Changes, str]:
            checkpoints = self._read(CHECKPOINTS)
            if not checkpoints:
                return Failure(self._nothing_recorded())
            since = checkpoints[-1]
            return self._snapshot().map(
                lambda now: Changes(
                    since,
                    self.git(
                        "diff", "--no-ext-diff", "--no-textconv", "--no-color",
                        "--find-renames", "--stat", "--patch", since.tree, now.tree,
                    ).decode(errors="replace"),
                )
            )  # fmt: skip

        return self._attempt(changes)

    # Undo and redo -------------------------------------------------------------

    def undo(self) -> Result[Restored, str]:
        """Put the workspace back as it was at the latest checkpoint (before the last
        turn). The state it replaces is kept, for :meth:`redo`."""

        def undo() -> Result[Restored, str]:
            checkpoints = self._read(CHECKPOINTS)
            if not checkpoints and self._read(UNDONE):
                return Failure(
                    f"nothing left to undo in {self.workspace}: every recorded turn is undone"
                )
            if not checkpoints:
                return Failure(self._nothing_recorded("to undo"))
            target = checkpoints[-1]
            match self._snapshot():
                case Failure(why):
                    return Failure(f"undo refused: {why}")
                case Success(now):
                    pass
            kept = dataclasses.replace(
                now.manifest, session=target.manifest.session, task=target.manifest.task,
                created=time.time(), undid=target.number,
            )  # fmt: skip
            redo = f"{REDO}{self._next_number():06d}"
            self._update_refs([(redo, self._commit(now.tree, kept))], [])
            restored = self._restore(now, target)
            moved = f"{UNDONE}{target.number:06d}"
            self._update_refs([(moved, target.commit)], [f"{CHECKPOINTS}{target.number:06d}"])
            return Success(restored)

        return self._attempt(undo)

    def redo(self) -> Result[Restored, str]:
        """Take the last undo back: the workspace as it was just before it. What it
        replaces becomes the checkpoint before that turn again, so undo still works."""

        def redo() -> Result[Restored, str]:
            kept = self._read(REDO)
            if not kept:
                return Failure(f"nothing to redo in {self.workspace}: no undo since the last turn")
            state = kept[-1]
            match self._snapshot():
                case Failure(why):
                    return Failure(f"redo refused: {why}")
                case Success(now):
                    pass
            back = dataclasses.replace(
                now.manifest, session=state.manifest.session, task=state.manifest.task,
                created=time.time(),
            )  # fmt: skip
            number = state.manifest.undid or self._next_number()
            checkpoint = f"{CHECKPOINTS}{number:06d}"
            restored = self._restore(now, state)
            self._update_refs(
                [(checkpoint, self._commit(now.tree, back))],
                [f"{REDO}{state.number:06d}", f"{UNDONE}{number:06d}"],
            )
            return Success(restored)

        return self._attempt(redo)

    def _restore(self, now: _Snapshot, target: Checkpoint) -> Restored:
        """Make the workspace ``target``, touching only the paths that differ: files
        it does not have are deleted, the others written back, folders made since and
        left empty removed, its empty folders and file modes brought back. Files left
        untouched keep their times, so build tools' caches stay valid."""
        listed = self.git(
            "diff-tree", "-r", "-z", "--no-renames", "--name-status", now.tree, target.tree
        ).split(b"\0")
        write: list[str] = []
        delete: list[str] = []
        for status, raw in zip(listed[0::2], listed[1::2], strict=False):
            path = os.fsdecode(raw)
            if status in (b"D", b"T"):  # only in the current tree (T: a file became a link)
                delete.append(path)
            if status in (b"A", b"M", b"T"):
                write.append(path)
        notices = self._repository_notice(target)
        deleted = [path for path in delete if self._remove(path)]
        created = [d for d in now.manifest.empty_dirs if d not in target.manifest.empty_dirs]
        folders = self._remove_created_folders([*deleted, *(f"{d}/." for d in created)], target)
        try:  # keeps the stat data of unchanged files: the next checkpoint hashes less
            self.git("read-tree", "-m", now.tree, target.tree)
        except GitError:
            self.git("read-tree", target.tree)
        if write:
            self.git(
                "checkout-index", "--force", "-u", "-z", "--stdin",
                stdin=b"".join(os.fsencode(p) + b"\0" for p in write),
            )  # fmt: skip
        modes = dict(target.manifest.modes)
        for path in write:
            if path in modes:
                os.chmod(os.path.join(self.workspace, path), modes[path])
        for folder in target.manifest.empty_dirs:
            os.makedirs(os.path.join(self.workspace, folder), exist_ok=True)
        if target.manifest.skipped_large:
            notices.append(
                "not restored (too large to record): " + _some(target.manifest.skipped_large)
            )
        made_ignored = [p for p in now.manifest.ignored if p not in target.manifest.ignored]
        if made_ignored:
            notices.append(
                "left as they are (an ignore rule of the workspace kept them out of the "
                "checkpoints): " + _some(made_ignored)
            )
        removed = [p for p in deleted if p not in write] + [f"{f}/" for f in folders]
        return Restored(target, tuple(write), tuple(removed), tuple(notices))

    def _remove(self, path: str) -> bool:
        """Delete a file (or a link) made since, never through a linked folder."""
        full = os.path.join(self.workspace, path)
        parent = os.path.dirname(full)
        if os.path.realpath(parent) != os.path.normpath(parent):
            return False  # a folder on the way is a link now: deleting would reach elsewhere
        try:
            if stat.S_ISDIR(os.lstat(full).st_mode):
                return False
            os.unlink(full)
        except FileNotFoundError:
            return False
        return True

    def _remove_created_folders(self, deleted: Iterable[str], target: Checkpoint) -> list[str]:
        """Folders left empty by the deletions that ``target`` does not have."""
        kept = set(target.manifest.empty_dirs)
        listed = self.git("ls-tree", "-r", "-d", "-z", "--name-only", target.tree).split(b"\0")
        kept |= {os.fsdecode(p) for p in listed if p}
        removed: list[str] = []
        for path in sorted(deleted, key=lambda p: -p.count("/")):
            folder = os.path.dirname(path)
            while folder and folder not in kept and folder not in removed:
                try:
                    os.rmdir(os.path.join(self.workspace, folder))
                except OSError:
                    break  # not empty (ignored files in it), or gone
                removed.append(folder)
                folder = os.path.dirname(folder)
        return sorted(removed)

    def _repository_notice(self, target: Checkpoint) -> list[str]:
        before, now = target.manifest.user_git, user_repository_state(self.workspace)
        if before and now and before != now:
            return [
                "the workspace's own git repository changed since (HEAD, refs or index): "
                "the files were restored, the repository left as it is"
            ]
        return []

    # Housekeeping --------------------------------------------------------------

    def _refs(self) -> list[str]:
        """Every ref of the shadow's: checkpoints, undone ones, states kept for redo."""
        return self.git("for-each-ref", "--format=%(refname)", "refs/treadle/").decode().split()

    def _next_number(self) -> int:
        return _next_number(self._refs())

    def _update_refs(self, create: Sequence[tuple[str, str]], delete: Sequence[str]) -> None:
        commands = [f"update {ref} {commit}\n" for ref, commit in create]
        commands += [f"delete {ref}\n" for ref in delete]
        if commands:
            self.git("update-ref", "--stdin", stdin="".join(commands).encode())

    def _prune_old(self, refs: Sequence[str]) -> None:
        """Past ``keep`` checkpoints (and a margin, so that git's gc runs once in a
        while, not every turn), drop the oldest and the objects only they held."""
        numbers = sorted(_number(r) for r in refs if r.startswith(CHECKPOINTS))
        if len(numbers) <= self.limits.keep + 10:
            return
        oldest_kept = numbers[-self.limits.keep]
        self._update_refs([], [ref for ref in refs if _number(ref) < oldest_kept])
        self.git("gc", "--quiet", "--prune=now")

    def _nothing_recorded(self, purpose: str = "") -> str:
        what = f"nothing {purpose} in" if purpose else "no checkpoint of"
        return f"{what} {self.workspace}: treadle records it before each turn"

    def _attempt(self, operation: Callable[[], Result[T, str]]) -> Result[T, str]:
        """Run ``operation`` holding the folder's lock; git and file errors are values."""
        try:
            with self._locked():
                return operation()
        except (GitError, OSError) as error:
            return Failure(f"checkpoints of {self.workspace}: {error}")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Two sessions on one workspace take turns (an flock in the folder)."""
        os.makedirs(self.folder, exist_ok=True)
        descriptor = os.open(
            os.path.join(self.folder, "lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600
        )
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)


def _number(ref: str) -> int:
    return int(ref.rsplit("/", 1)[1])


def _next_number(refs: Sequence[str]) -> int:
    return max((_number(ref) for ref in refs), default=0) + 1


def _some(paths: Sequence[str], shown: int = 10) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def _bounded_walk(top: str, limit: int) -> Iterator[tuple[str, list[str], list[str]]]:
    seen = 0
    for root, folders, files in os.walk(top):
        folders[:] = [f for f in folders if f != ".git"]
        seen += len(folders)
        if seen > limit:
            return
        yield root, folders, files
