"""The sed and awk readers name what in a script runs a command or writes a file."""

from __future__ import annotations

import pytest

from treadle.domain.rules.script_hazards import awk_program_hazard, sed_script_hazard


@pytest.mark.parametrize(
    ("script", "why"),
    [
        ("w out.txt", "its w command writes a file"),
        ("1,3W out.txt", "its W command writes a file"),
        ("s/a/b/g;w out.txt", "its w command writes a file"),
        ("e", "its e command runs a command"),
        ("s/x/y/;e touch pwned", "its e command runs a command"),
        ("s/.*/touch pwned/e", "its s///e runs the result as a command"),
        ("s/a/b/gw out", "its s///w writes a file"),
        ("s/a/b/2pw out", "its s///w writes a file"),
        ("/x/{s/x/w/w p.out\n}", "its s///w writes a file"),
        # The delimiter is literal in a bracket, as GNU sed reads it.
        ("s/[/]/x/w o", "its s///w writes a file"),
        # A text command's text ends at its line: what follows is a command again.
        ("a\\\nfoo\nw x", "its w command writes a file"),
        ("0~2w x", "its w command writes a file"),
        ("$!N;/re/I,+2 w x", "its w command writes a file"),
        ("\\%a%w x", "its w command writes a file"),
        ("k", "it has a command treadle does not know (k)"),
        ("s/a/b", "it has an s command treadle cannot read"),
        ("/unended", "it has an address treadle cannot read"),
    ],
)
def test_a_sed_script_that_runs_or_writes_is_named(script, why):
    assert sed_script_hazard(script) == why


@pytest.mark.parametrize(
    "script",
    [
        "s/a/b/g",
        "1!G;h;$!d",
        "a hello w world",  # the w is text to append
        "i\\\nwrite e here",
        "y/x/w/",
        ":a;s/x/y/;ta",
        "s|a\\|w|b|g",  # an escaped delimiter is part of the regex
        "/x/I p",
        "q5",
        "l 5;l",
        "1,/re/d",
        "r other.txt",  # reads, writes nothing
        "# w in a comment\np",
        "s/w/e/",
        "/e/,/w/{p;d}",
        "",
    ],
)
def test_a_sed_script_that_only_reads_and_prints_is_not_named(script):
    assert sed_script_hazard(script) == ""


@pytest.mark.parametrize(
    ("program", "why"),
    [
        ('{ system("touch pwned") }', "its system() runs a command"),
        ("{ system (x) }", "its system() runs a command"),
        ('{ print | "sh" }', "its | runs a command"),
        ('{ "date" | getline d }', "its | runs a command"),
        ('{ print |& "cat" }', "its | runs a command"),
        ('{ print > "f" }', "its print > writes a file"),
        ('{ print $1 >> "f" }', "its print > writes a file"),
        ('{ printf("%s", $1) > "o" }', "its print > writes a file"),
        ('@load "filefuncs"', "its @ directive loads code"),
        # x++ / 2 divides: what follows is code, not a regex to skip.
        ('{ x++ / 2; system("y"); z = 1 / 3 }', "its system() runs a command"),
    ],
)
def test_an_awk_program_that_runs_or_writes_is_named(program, why):
    assert awk_program_hazard(program) == why


@pytest.mark.parametrize(
    "program",
    [
        "$3 > 100 { print $1 }",  # a comparison, not a redirection
        "{ print (a > b) }",
        "/a|b/ { print }",  # a | inside a regex
        "a || b",
        '{ print "a > b | c" }',  # inside a string
        "{ n = NF / 2; print n }",
        "# system() in a comment\n{ print }",
        '{ getline line < "file" }',
        "",
    ],
)
def test_an_awk_program_that_only_reads_and_prints_is_not_named(program):
    assert awk_program_hazard(program) == ""
