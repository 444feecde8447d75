"""Options and scripts that make a command run another or write a file.

Allowing the prefix ``find`` allows finding, not ``find . -exec rm {} +``: a command
whose words carry one of these is not covered by its allowed prefix, and is asked.
The table is data, one row per program (or per git subcommand), each hazard with
the reason the person reads. How a spelling matches a word:

- ``--name``: the long option, as ``--name``, ``--name=VALUE`` or an abbreviation
  (GNU programs take ``--in`` for ``--in-place``);
- ``-x``: the short option, alone or in a cluster (``-ni``, ``-i.bak``); the
  program's ``valued`` letters take the rest of the cluster, or the next word;
- anything else: a pattern for a whole word (``-exec``, ``of=*``, ``+*``); one that
  does not start with a dash matches no option word.

Example::

    >>> command_hazard(["find", ".", "-exec", "touch", "x", "{}", "+"])
    '-exec runs a command on each file found'
    >>> command_hazard(["find", ".", "-name", "*.py"])
    ''
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from treadle.domain.rules.script_hazards import awk_program_hazard, sed_script_hazard
from treadle.domain.rules.shell_spelling import unread_spelling


@dataclass(frozen=True, slots=True)
class Hazard:
    spelling: str
    why: str


@dataclass(frozen=True, slots=True)
class ProgramHazards:
    """What in one program's words runs or writes. ``operands`` makes a hazard of
    having at least ``operands[0]`` operands (``tee FILE`` writes FILE); ``script``
    names the reader of the program's own script (its first operand, or its ``-e``)."""

    hazards: tuple[Hazard, ...] = ()
    valued: str = ""
    script: Literal["", "sed", "awk"] = ""
    operands: tuple[int, str] | None = None
    old_style: bool = False  # tar: a first word without a dash is a cluster


def _h(*rows: tuple[str, str]) -> tuple[Hazard, ...]:
    return tuple(Hazard(spelling, why) for spelling, why in rows)


_RUNS = "runs a command"
_WRITES = "writes a file"

_TABLE: dict[str, ProgramHazards] = {
    "find": ProgramHazards(
        _h(
            ("-exec", "runs a command on each file found"),
            ("-execdir", "runs a command on each file found"),
            ("-ok", "runs a command on each file found"),
            ("-okdir", "runs a command on each file found"),
            ("-delete", "deletes the files found"),
            ("-fprint", "writes the list to a file"),
            ("-fprint0", "writes the list to a file"),
            ("-fprintf", "writes the list to a file"),
            ("-fls", "writes the list to a file"),
        )
    ),
    "rg": ProgramHazards(
        _h(
            ("--pre", "runs a command on each file searched"),
            ("--pre-glob", "chooses the files a --pre command runs on"),
        ),
        valued="ABCEefgjMmrtT",
    ),
    "sed": ProgramHazards(
        _h(
            ("-i", "edits the files in place"),
            ("--in-place", "edits the files in place"),
            ("-f", "reads its script from a file treadle has not read"),
            ("--file", "reads its script from a file treadle has not read"),
        ),
        valued="efl",
        script="sed",
    ),
    "tar": ProgramHazards(
        _h(
            ("--to-command", "pipes each file to a command"),
            ("--checkpoint-action", "can run a command at each checkpoint"),
            ("--use-compress-program", "runs the program it names"),
            ("-I", "runs the program it names"),
            ("--rsh-command", "runs the program it names"),
            ("--rmt-command", "runs the program it names"),
            ("--info-script", "runs a script at each volume's end"),
            ("--new-volume-script", "runs a script at each volume's end"),
            ("-F", "runs a script at each volume's end"),
        ),
        valued="bCfFgHIKLNTVX",
        old_style=True,
    ),
    "git": ProgramHazards(
        _h(
            ("--upload-pack", "runs the program it names"),
            ("--receive-pack", "runs the program it names"),
            ("--exec", "runs the program it names"),
            ("--config", "sets configuration that can name commands"),
            ("--output", _WRITES),
            ("--output-directory", "writes files"),
            ("--open-files-in-pager", _RUNS),
            ("--extcmd", _RUNS),
        )
    ),
    "git clone": ProgramHazards(
        _h(("-u", "runs the program it names"), ("-c", "sets configuration that can name commands"))
    ),
    "git rebase": ProgramHazards(_h(("-x", "runs a command after each commit"))),
    "git grep": ProgramHazards(_h(("-O", _RUNS))),
    "git format-patch": ProgramHazards(_h(("-o", "writes files"))),
    "git archive": ProgramHazards(_h(("-o", _WRITES))),
    "git difftool": ProgramHazards(_h(("-x", _RUNS), ("-t", "runs the tool it names"))),
    "git bisect": ProgramHazards(_h(("run", "runs a command at each step"))),
    "git submodule": ProgramHazards(_h(("foreach", "runs a command in each submodule"))),
    "git config": ProgramHazards(
        _h(
            *(
                (word, "changes git's configuration, which can name commands git runs")
                for word in (
                    "set",
                    "unset",
                    "edit",
                    "rename-section",
                    "remove-section",
                    "--add",
                    "--replace-all",
                    "--unset",
                    "--unset-all",
                    "--rename-section",
                    "--remove-section",
                    "--edit",
                    "-e",
                )
            )
        ),
        operands=(2, "a value set in git's configuration can name commands git runs"),
    ),
    "awk": ProgramHazards(
        _h(("-f", "reads its program from a file treadle has not read")),
        valued="fvF",
        script="awk",
    ),
    "gawk": ProgramHazards(
        _h(
            ("-f", "reads its program from a file treadle has not read"),
            ("--file", "reads its program from a file treadle has not read"),
            ("-i", "includes a file treadle has not read"),
            ("--include", "includes a file treadle has not read"),
            ("-l", "loads compiled code"),
            ("--load", "loads compiled code"),
            ("-E", "reads its program from a file treadle has not read"),
            ("--exec", "reads its program from a file treadle has not read"),
            ("-o", "writes the program to a file"),
            ("--pretty-print", "writes the program to a file"),
            ("-p", "writes a profile to a file"),
            ("--profile", "writes a profile to a file"),
        ),
        valued="fvFeEilW",
        script="awk",
    ),
    "mawk": ProgramHazards(
        _h(("-f", "reads its program from a file treadle has not read")),
        valued="fvFW",
        script="awk",
    ),
    "less": ProgramHazards(
        _h(
            ("+*", "runs its commands at the start, a shell command among them"),
            ("-o", _WRITES),
            ("-O", _WRITES),
            ("--log-file", _WRITES),
            ("--LOG-FILE", _WRITES),
            ("-k", "reads key bindings that can run commands"),
            ("--lesskey-file", "reads key bindings that can run commands"),
        ),
        valued="bhjkoOpPtTxyz",
    ),
    "vim": ProgramHazards(
        _h(
            ("+*", "runs the Ex command it is given"),
            ("-c", "runs the Ex command it is given"),
            ("--cmd", "runs the Ex command it is given"),
            ("-S", "sources a script"),
            ("-s", "reads keys from a script"),
            ("-u", "reads a vimrc that can run commands"),
            ("-w", _WRITES),
            ("-W", _WRITES),
        ),
        valued="cSsuwWTirqt",
    ),
    "man": ProgramHazards(
        _h(
            ("-P", "runs the pager it names"),
            ("--pager", "runs the pager it names"),
            ("-H", "runs a browser"),
            ("--html", "runs a browser"),
        ),
        valued="CPMSemLpr",
    ),
    "rsync": ProgramHazards(
        _h(
            ("-e", "runs the remote shell it names"),
            ("--rsh", "runs the remote shell it names"),
            ("--rsync-path", "runs the program it names"),
        ),
        valued="eBfMT",
    ),
    "zip": ProgramHazards(
        _h(
            ("-TT*", "runs the command it names to test the archive"),
            ("--unzip-command", "runs the command it names to test the archive"),
        )
    ),
    "sort": ProgramHazards(
        _h(
            ("-o", _WRITES),
            ("--output", _WRITES),
            ("--compress-program", "runs the program it names"),
        ),
        valued="kotST",
    ),
    "tee": ProgramHazards(operands=(1, "tee writes every file it is given")),
    "dd": ProgramHazards(_h(("of=*", _WRITES))),
    "curl": ProgramHazards(
        _h(
            ("-o", _WRITES),
            ("--output", _WRITES),
            ("-O", _WRITES),
            ("--remote-name", _WRITES),
            ("--remote-name-all", _WRITES),
            ("-D", _WRITES),
            ("--dump-header", _WRITES),
            ("-c", _WRITES),
            ("--cookie-jar", _WRITES),
            ("-K", "reads options from a file treadle has not read"),
            ("--config", "reads options from a file treadle has not read"),
            ("--trace", _WRITES),
            ("--trace-ascii", _WRITES),
            ("--stderr", _WRITES),
            ("--libcurl", _WRITES),
            ("--etag-save", _WRITES),
            ("--hsts", _WRITES),
            ("--alt-svc", _WRITES),
        ),
        valued="AbcCdDeEFHKmoPQrTuUwxXyYz",
    ),
    "wget": ProgramHazards(
        _h(
            ("-O", _WRITES),
            ("--output-document", _WRITES),
            ("-o", _WRITES),
            ("--output-file", _WRITES),
            ("-a", _WRITES),
            ("--append-output", _WRITES),
            ("-e", "runs a wgetrc command, which can write files"),
            ("--execute", "runs a wgetrc command, which can write files"),
            ("--use-askpass", _RUNS),
        ),
        valued="OoaePiBtTwQUlADRIX",
    ),
    "make": ProgramHazards(
        _h(
            ("-f", "reads a makefile treadle has not read"),
            ("--file", "reads a makefile treadle has not read"),
            ("--makefile", "reads a makefile treadle has not read"),
            ("-C", "runs the makefile of another folder"),
            ("--directory", "runs the makefile of another folder"),
            ("-E", "evaluates make code, which can run commands"),
            ("--eval", "evaluates make code, which can run commands"),
            ("*=*", "sets a variable, which can change the commands make runs"),
        ),
        valued="fCEIjlo",
    ),
    "npm": ProgramHazards(
        _h(
            ("--script-shell", "runs scripts in the shell it names"),
            ("--node-options", "passes options to node, which can load code"),
        )
    ),
    "pnpm": ProgramHazards(_h(("--script-shell", "runs scripts in the shell it names"))),
    "yarn": ProgramHazards(_h(("--script-shell", "runs scripts in the shell it names"))),
}

# Other names of the same programs, with the same options.
_SAME_AS = {"vi": "vim", "nvim": "vim", "view": "vim", "ex": "vim", "nawk": "awk", "gsed": "sed"}
HAZARDS: Mapping[str, ProgramHazards] = {
    **_TABLE,
    **{alias: _TABLE[program] for alias, program in _SAME_AS.items()},
}


def _is_short(spelling: str) -> bool:
    return len(spelling) == 2 and spelling[0] == "-" and spelling != "--"


def _is_option(spelling: str) -> bool:
    return spelling.startswith("--") or _is_short(spelling)


def _long_matches(word: str, spelling: str) -> bool:
    name = word.split("=", 1)[0]
    return len(name) > 2 and spelling.startswith(name)


def _option_hazard(word: str, rows: Sequence[Hazard], valued: str) -> tuple[Hazard | None, bool]:
    """The hazard one option word carries, and whether it takes the next word."""
    if word.startswith("--"):
        for row in rows:
            if row.spelling.startswith("--") and _long_matches(word, row.spelling):
                return row, False
        return None, False
    shorts = {row.spelling[1]: row for row in rows if _is_short(row.spelling)}
    for at, letter in enumerate(word[1:], start=1):
        if letter in shorts:
            return shorts[letter], False
        if letter in valued:
            return None, at == len(word) - 1
    return None, False


def _word_hazard(word: str, rows: Sequence[Hazard]) -> Hazard | None:
    """The row a whole word matches, spelt as the word (``of=/dev/sda``). A pattern
    without a dash matches no option (make's ``*=*`` is not ``--file=x``)."""
    for row in rows:
        if _is_option(row.spelling) or (word[:1] == "-" and row.spelling[:1] != "-"):
            continue
        if fnmatchcase(word, row.spelling):
            return Hazard(word, row.why)
    return None


def _scripts(kind: str, words: Sequence[str], valued: str) -> tuple[list[str], list[str]]:
    """The script texts given with ``-e``/``--expression``/``--source``, and the operands."""
    given: list[str] = []
    operands: list[str] = []
    long_names = ("--expression", "--source") if kind else ()
    i, options_end = 0, False
    while i < len(words):
        word = words[i]
        if options_end or not word.startswith("-") or word == "-":
            operands.append(word)
        elif word == "--":
            options_end = True
        elif word.startswith("--"):
            name, has_value, value = word.partition("=")
            if any(len(name) > 2 and long.startswith(name) for long in long_names):
                if has_value:
                    given.append(value)
                elif i + 1 < len(words):
                    given.append(words[i + 1])
                    i += 1
        else:
            for at, letter in enumerate(word[1:], start=1):
                if letter in valued:
                    rest = word[at + 1 :]
                    if not rest and i + 1 < len(words):
                        rest = words[i + 1]
                        i += 1
                    if letter == "e" and kind:
                        given.append(rest)
                    break
        i += 1
    return given, operands


def command_hazard(words: Sequence[str], command: str = "") -> str:
    """What in a plain command runs or writes: '' when nothing does.

    ``words`` are its words as the shell reads them (quotes undone); ``command``,
    the text they were read from, is checked for spellings bash reads otherwise.
    """
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    rows = [(HAZARDS[program], words[1:])] if program in HAZARDS else []
    if len(words) > 1 and f"{program} {words[1]}" in HAZARDS:
        rows.append((HAZARDS[f"{program} {words[1]}"], words[2:]))
    if rows and command:
        unread = unread_spelling(command)
        if unread:
            return unread
    for hazards, args in rows:
        found = _first_hazard(args, hazards)
        if found:
            return found
    return ""


def _first_hazard(args: Sequence[str], hazards: ProgramHazards) -> str:
    rows = hazards.hazards
    shorts = {row.spelling[1]: row for row in rows if _is_short(row.spelling)}
    if hazards.old_style and args and not args[0].startswith("-"):
        # tar's "tar xIf PROGRAM a.tar": every letter is an option, their values follow.
        for letter in args[0]:
            if letter in shorts:
                return f"{shorts[letter].spelling} {shorts[letter].why}"
        args = args[1:]
    i, options_end = 0, False
    while i < len(args):
        word = args[i]
        row = _word_hazard(word, rows)
        if row is None and not options_end and word.startswith("-") and word != "-":
            if word == "--":
                options_end = True
            else:
                row, takes_next = _option_hazard(word, rows, hazards.valued)
                i += takes_next
        if row is not None:
            return f"{row.spelling} {row.why}"
        i += 1
    given, operands = _scripts(hazards.script, args, hazards.valued)
    if hazards.operands is not None and len(operands) >= hazards.operands[0]:
        return hazards.operands[1]
    if hazards.script:
        read = sed_script_hazard if hazards.script == "sed" else awk_program_hazard
        for script in given or operands[:1]:
            why = read(script)
            if why:
                return f"the {hazards.script} script: {why}"
    return ""
