"""What in a sed script or an awk program runs a command or writes a file.

An allowed ``sed`` or ``awk`` prefix covers reading and printing, not a script that
runs (``e``, ``system()``, a pipe) or writes (``w``, ``print >``). Each reader walks
the script the way the program would and names the first such thing; a script it
cannot read the whole of is named too, since what it could not read may be either.

Example::

    >>> sed_script_hazard("s/a/b/g;w out.txt")
    'its w command writes a file'
    >>> awk_program_hazard('$3 > 100 { print $1 }')
    ''
"""

from __future__ import annotations

_SED_SIMPLE = frozenset("=dDgGhHnNpPxzF")  # no argument
_SED_NUMBER = frozenset("lLqQ")  # an optional number
_SED_LABEL = frozenset(":btTv")  # a label or version, up to ; or the line's end
_SED_TEXT = frozenset("aic")  # text to the line's end (a backslash goes on)
_SED_S_FLAGS = frozenset("gpiImM0123456789")


def _skip_bracket(text: str, i: int) -> int:
    """Past the bracket expression opening at ``text[i] == "["``: its own delimiter
    is literal inside it (``s/[/]/x/``), as sed and awk read it."""
    j = i + 1
    if j < len(text) and text[j] == "^":
        j += 1
    if j < len(text) and text[j] == "]":
        j += 1
    while j < len(text) and text[j] != "]":
        if text[j] == "[" and j + 1 < len(text) and text[j + 1] in ":.=":
            end = text.find(text[j + 1] + "]", j + 2)
            j = len(text) if end < 0 else end + 2
            continue
        j += 1
    return j + 1


def _skip_delimited(text: str, i: int, delimiter: str, *, brackets: bool) -> int:
    """Past the part that starts at ``i`` and ends at an unescaped ``delimiter``;
    ``len(text) + 1`` when it never ends."""
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
        elif c == delimiter:
            return i + 1
        elif c == "[" and brackets:
            i = _skip_bracket(text, i)
        else:
            i += 1
    return len(text) + 1


def _line_end(text: str, i: int, *, continued: bool = False) -> int:
    """Where the line from ``i`` ends (a backslash before the newline goes on when
    ``continued``)."""
    while i < len(text) and text[i] != "\n":
        i += 2 if continued and text[i] == "\\" else 1
    return i


def _skip_spaces(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _skip_sed_address(script: str, i: int) -> int:
    if i >= len(script):
        return i
    c = script[i]
    if c.isdigit() or c in "+~":
        i += 1
        while i < len(script) and (script[i].isdigit() or script[i] == "~"):
            i += 1
        return i
    if c == "$":
        return i + 1
    if c in "/\\":
        delimiter = "/"
        if c == "\\":
            if i + 1 >= len(script):
                return len(script) + 1
            delimiter, i = script[i + 1], i + 1
        i = _skip_delimited(script, i + 1, delimiter, brackets=True)
        while i < len(script) and script[i] in "IM":
            i += 1
    return i


def sed_script_hazard(script: str) -> str:
    """What in a sed script runs a command or writes a file: '' when nothing does.

    Reads the GNU commands: ``e`` runs one, ``w``/``W`` write, ``s///e`` runs the
    pattern space and ``s///w FILE`` writes; ``r``/``R`` only read.
    """
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;}":
            i += 1
            continue
        if c == "#":
            i = _line_end(script, i)
            continue
        i = _skip_sed_address(script, i)
        i = _skip_spaces(script, i)
        if i < n and script[i] == ",":
            i = _skip_sed_address(script, _skip_spaces(script, i + 1))
        i = _skip_spaces(script, i)
        while i < n and script[i] in "! \t":
            i += 1
        if i > n:
            return "it has an address treadle cannot read"
        if i == n:
            return ""
        command = script[i]
        i += 1
        if command == "{" or command in _SED_SIMPLE:
            continue
        if command in _SED_NUMBER:
            i = _skip_spaces(script, i)
            while i < n and script[i].isdigit():
                i += 1
        elif command in _SED_LABEL:
            while i < n and script[i] not in ";\n":
                i += 1
        elif command in _SED_TEXT:
            i = _line_end(script, i, continued=True)
        elif command in "rR":
            i = _line_end(script, i)
        elif command in "wW":
            return f"its {command} command writes a file"
        elif command == "e":
            return "its e command runs a command"
        elif command in "sy":
            if i >= n or script[i] in "\n\\":
                return f"it has an {command} command treadle cannot read"
            delimiter = script[i]
            i = _skip_delimited(script, i + 1, delimiter, brackets=command == "s")
            i = _skip_delimited(script, i, delimiter, brackets=False)
            if i > n:
                return f"it has an {command} command treadle cannot read"
            while command == "s" and i < n and script[i] in _SED_S_FLAGS | {"e", "w"}:
                if script[i] == "e":
                    return "its s///e runs the result as a command"
                if script[i] == "w":
                    return "its s///w writes a file"
                i += 1
        else:
            return f"it has a command treadle does not know ({command})"
    return ""


_AWK_OPERAND_END = frozenset("_)]$.")


def awk_program_hazard(program: str) -> str:
    """What in an awk program runs a command or writes a file: '' when nothing does.

    ``system()`` and any pipe (``cmd | getline``, ``print | cmd``, gawk's ``|&``)
    run one; ``print > file`` and ``>>`` write; gawk's ``@load`` loads code.
    A comparison (``$3 > 100``) is not a redirection: only a ``>`` outside
    parentheses in a ``print`` or ``printf`` statement is.
    """
    i, n = 0, len(program)
    operand = False  # whether the last token ends an operand (then "/" divides)
    printing, depth = False, 0
    while i < n:
        c = program[i]
        if c == "\\":
            i += 2
            continue
        if c in " \t":
            i += 1
            continue
        if c == "#":
            i = _line_end(program, i)
            continue
        if c == '"':
            i = _skip_delimited(program, i + 1, '"', brackets=False)
            operand = True
            continue
        if c == "/" and not operand:
            i = _skip_delimited(program, i + 1, "/", brackets=True)
            operand = True
            continue
        if c.isalnum() or c == "_":
            j = i
            while j < n and (program[j].isalnum() or program[j] == "_"):
                j += 1
            word = program[i:j]
            if word == "system":  # a built-in name: it can only be the call
                return "its system() runs a command"
            if word in ("print", "printf"):
                printing, depth = True, 0
            i, operand = j, True
            continue
        if c == "@":
            return "its @ directive loads code"
        if c == "|":
            if program.startswith("||", i):
                i, operand = i + 2, False
                continue
            return "its | runs a command"
        if c == ">" and printing and depth == 0:
            return "its print > writes a file"
        if c in "\n;{}":
            printing = False
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        if program.startswith(("++", "--"), i):
            i += 2  # x++ / 2 divides: what came before is still an operand
            continue
        operand = c in _AWK_OPERAND_END
        i += 1
    return ""
