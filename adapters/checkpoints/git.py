"""The shadow repository's git: its own directory, a clean environment, no user settings.

Every git process treadle runs for checkpoints gets :func:`shadow_environment`: none of
the inherited ``GIT_*`` variables (they could point it at the user's repository, or
pass a parent git's ``-c`` settings), no system or global configuration, an empty
``HOME``. The shadow's own configuration turns off hooks, fsmonitor, line-ending
conversion and filters, so nothing of the user's runs and the bytes stay the bytes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence

SHADOW_CONFIG = {
    "core.autocrlf": "false",  # bytes in, bytes out
    "core.safecrlf": "false",
    "core.symlinks": "true",
    "core.filemode": "true",
    "core.fsmonitor": "false",  # no daemon, no hook run on our behalf
    "core.hooksPath": os.devnull,
    "core.untrackedCache": "true",  # walking an unchanged tree again is cheap
    "core.quotePath": "false",
    "core.precomposeUnicode": "false",
    "core.bigFileThreshold": "1m",  # big blobs are stored, not delta-compressed
    "index.version": "4",
    "gc.auto": "0",  # treadle decides when to prune, never mid-turn
    "maintenance.auto": "false",
    "commit.gpgSign": "false",
    "submodule.recurse": "false",
    "color.ui": "false",
    "advice.addEmbeddedRepo": "false",
    "advice.addIgnoredFile": "false",
}

SHADOW_ATTRIBUTES = "* -text -filter -ident -working-tree-encoding !eol\n"
"""``info/attributes`` outranks every ``.gitattributes`` in the tree: no line-ending
conversion, no clean or smudge filter (git-lfs or any other), no ``$Id$`` expansion."""

IDENTITY = {
    "GIT_AUTHOR_NAME": "treadle",
    "GIT_AUTHOR_EMAIL": "treadle@localhost",
    "GIT_COMMITTER_NAME": "treadle",
    "GIT_COMMITTER_EMAIL": "treadle@localhost",
}


class GitError(Exception):
    """A git command of the shadow failed; the message is its own."""


def shadow_environment(
    inherited: Mapping[str, str], git_dir: str, work_tree: str, index: str, home: str
) -> dict[str, str]:
    """The environment of every shadow git process.

    >>> env = shadow_environment({"GIT_DIR": "/u/.git", "PATH": "/bin"}, "/s", "/w", "/i", "/h")
    >>> env["GIT_DIR"], env["PATH"], env["HOME"]
    ('/s', '/bin', '/h')
    """
    dropped = ("HOME", "XDG_CONFIG_HOME", "LC_ALL", "LANGUAGE")
    environment = {
        name: value
        for name, value in inherited.items()
        if not name.startswith("GIT_") and name not in dropped
    }
    environment.update(IDENTITY)
    environment.update(
        {
            "GIT_DIR": git_dir,
            "GIT_WORK_TREE": work_tree,
            "GIT_INDEX_FILE": index,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_LITERAL_PATHSPECS": "1",  # a file named '*.py' or ':x' is just that
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            # git before 2.32 ignores GIT_CONFIG_GLOBAL: an empty home has no .gitconfig
            "HOME": home,
            "XDG_CONFIG_HOME": home,
            "LC_ALL": "C",
        }
    )
    return environment


class ShadowGit:
    """Runs git on the shadow repository ``git_dir`` with ``work_tree`` as its work tree."""

    def __init__(self, git_dir: str, work_tree: str, index: str, home: str) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.home = home
        self.env = shadow_environment(os.environ, git_dir, work_tree, index, home)
        self.binary = shutil.which("git", path=self.env.get("PATH")) or ""
        self.stderr = b""

    def __call__(
        self,
        *args: str,
        stdin: bytes | None = None,
        ok: Sequence[int] = (0,),
        work_tree: str = "",
        literal: bool = True,
    ) -> bytes:
        """``git ARGS``'s output; GitError when it ends with another code than ``ok``.
        ``work_tree`` runs it on another work tree than the workspace; ``literal``
        False is for the commands that refuse literal pathspecs (``check-ignore``)."""
        if not self.binary:
            raise GitError("checkpoints need git, and there is no git on PATH")
        env = dict(self.env)
        if work_tree:
            env["GIT_WORK_TREE"] = work_tree
        if not literal:
            del env["GIT_LITERAL_PATHSPECS"]
        result = subprocess.run(
            [self.binary, *args],
            cwd=work_tree or self.work_tree,
            env=env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
        self.stderr = result.stderr
        if result.returncode not in ok:
            problem = result.stderr.decode(errors="replace").strip()
            raise GitError(f"git {args[0]}: {problem or f'exit {result.returncode}'}")
        return result.stdout

    def paths(self, *args: str) -> Iterator[str]:
        """The NUL-separated paths ``git ARGS`` prints, as they come: the caller may stop
        reading a huge listing early (the process is then killed)."""
        if not self.binary:
            raise GitError("checkpoints need git, and there is no git on PATH")
        process = subprocess.Popen(
            [self.binary, *args],
            cwd=self.work_tree,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert process.stdout is not None
        rest = b""
        try:
            while chunk := process.stdout.read(1 << 16):
                parts = (rest + chunk).split(b"\0")
                rest = parts.pop()
                yield from (os.fsdecode(part) for part in parts)
        finally:
            process.kill()
            process.stdout.close()
            process.wait()

    def ensure(self) -> None:
        """Make the shadow repository, once."""
        if os.path.isfile(os.path.join(self.git_dir, "HEAD")):
            return
        os.makedirs(self.home, exist_ok=True)
        self("init", "--quiet")
        # Written at once, rather than by a `git config` process per key.
        with open(os.path.join(self.git_dir, "config"), "a") as config:
            config.write(_config_text(SHADOW_CONFIG))
        os.makedirs(os.path.join(self.git_dir, "info"), exist_ok=True)
        with open(os.path.join(self.git_dir, "info", "attributes"), "w") as handle:
            handle.write(SHADOW_ATTRIBUTES)


def _config_text(settings: Mapping[str, str]) -> str:
    """``settings`` (``section.key``: value) as git configuration file text.

    >>> _config_text({"core.fsmonitor": "false", "gc.auto": "0"})
    '[core]\\n\\tfsmonitor = false\\n[gc]\\n\\tauto = 0\\n'
    """
    sections: dict[str, list[str]] = {}
    for name, value in settings.items():
        section, key = name.split(".", 1)
        sections.setdefault(section, []).append(f"\t{key} = {value}\n")
    return "".join(f"[{section}]\n" + "".join(keys) for section, keys in sections.items())


def literal_pattern(path: str) -> str:
    r"""A gitignore pattern that matches exactly ``path``, anchored at the top.

    >>> literal_pattern("a/[x]*?.txt"), literal_pattern("#b "), literal_pattern("!c")
    ('/a/\\[x\\]\\*\\?.txt', '/\\#b\\ ', '/\\!c')
    """
    escaped = "".join("\\" + ch if ch in "\\*?[]" else ch for ch in path)
    if escaped[:1] in ("#", "!"):
        escaped = "\\" + escaped
    if escaped.endswith(" "):
        escaped = escaped[:-1] + "\\ "
    return "/" + escaped
