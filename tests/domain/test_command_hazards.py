"""Options and scripts that run or write make a command more than its prefix says."""

from __future__ import annotations

import shlex

import pytest

from treadle.domain.rules.command_hazards import HAZARDS, command_hazard
from treadle.domain.rules.shell_spelling import unread_spelling


def hazard(command: str) -> str:
    return command_hazard(shlex.split(command), command)


def _example(key: str, spelling: str) -> list[str]:
    """A command that uses one row of the table as its program would be given it."""
    if spelling.startswith("--"):
        used = [f"{spelling}=x"]
    elif len(spelling) == 2 and spelling[0] == "-":
        used = [spelling, "x"]
    else:
        used = [spelling.replace("*", "x")]
    return [*key.split(), *used, "file"]


ROWS = [(key, row) for key, program in HAZARDS.items() for row in program.hazards]


@pytest.mark.parametrize(("key", "row"), ROWS, ids=[f"{k} {r.spelling}" for k, r in ROWS])
def test_every_row_of_the_table_is_found_where_its_program_would_read_it(key, row):
    found = command_hazard(_example(key, row.spelling))
    assert found.endswith(row.why)
    assert found.split()[0] in (row.spelling, row.spelling.replace("*", "x"))


# Written by hand, each as a person would type it: the table is not checked against itself.
HAND_WRITTEN = [
    ("find . -exec touch pwned {} +", "-exec runs a command on each file found"),
    ("find src -name '*.py' -execdir rm {} +", "-execdir runs a command on each file found"),
    ("find . -ok rm {} +", "-ok runs a command on each file found"),
    ("find . -okdir rm {} +", "-okdir runs a command on each file found"),
    ("find . -name '*.tmp' -delete", "-delete deletes the files found"),
    ("find . -fprint /tmp/list", "-fprint writes the list to a file"),
    ("find . -fprint0 out", "-fprint0 writes the list to a file"),
    ("find / -fprintf out %p", "-fprintf writes the list to a file"),
    ("find . -fls out", "-fls writes the list to a file"),
    ("find . '-exec' touch pwned {} +", "-exec runs a command on each file found"),
    ('find . -ex"ec" touch pwned {} +', "-exec runs a command on each file found"),
    ("find . -ex\\ec touch pwned {} +", "-exec runs a command on each file found"),
    ("find -- . -exec touch x {} +", "-exec runs a command on each file found"),
    ("rg secret --pre ./decode.sh", "--pre runs a command on each file searched"),
    ("rg secret --pre=./decode.sh", "--pre runs a command on each file searched"),
    ("rg x --pre-glob '*.gz'", "--pre-glob chooses the files a --pre command runs on"),
    ("sed -i s/a/b/ f", "-i edits the files in place"),
    ("sed -ni p f", "-i edits the files in place"),
    ("sed -i.bak s/a/b/ f", "-i edits the files in place"),
    ("sed --in-place=.bak s/a/b/ f", "--in-place edits the files in place"),
    ("sed --in s/a/b/ f", "--in-place edits the files in place"),
    ("sed s/a/b/ f -i", "-i edits the files in place"),  # GNU reads options after files
    ("sed -f script.sed f", "-f reads its script from a file treadle has not read"),
    ("sed -n 'w out' f", "the sed script: its w command writes a file"),
    ("sed -e p -e 's/a/b/w out' f", "the sed script: its s///w writes a file"),
    ("sed --expression=e f", "the sed script: its e command runs a command"),
    ("sed --expression 's/.*/id/e' f", "the sed script: its s///e runs the result as a command"),
    ("sed -n -es/x/y/w\\ o f", "the sed script: its s///w writes a file"),
    ("gsed 1e f", "the sed script: its e command runs a command"),
    ("tar -xf a.tar --to-command=sh", "--to-command pipes each file to a command"),
    ("tar --to-c=sh -xf a.tar", "--to-command pipes each file to a command"),
    (
        "tar -cf a.tar --checkpoint=1 --checkpoint-action=exec=sh .",
        "--checkpoint-action can run a command at each checkpoint",
    ),
    (
        "tar --use-compress-program=./x -xf a.tar",
        "--use-compress-program runs the program it names",
    ),
    ("tar -I ./x -xf a.tar", "-I runs the program it names"),
    ("tar fI a.tar ./x", "-I runs the program it names"),  # old style: letters, values after
    ("tar -xf a.tar --rsh-command=./x", "--rsh-command runs the program it names"),
    ("tar -cf a.tar --info-script=./x .", "--info-script runs a script at each volume's end"),
    ("tar -F ./x -cf a.tar .", "-F runs a script at each volume's end"),
    ("git fetch --upload-pack='touch pwned' origin", "--upload-pack runs the program it names"),
    ("git push --receive-pack=./x origin", "--receive-pack runs the program it names"),
    ("git clone -u ./x repo", "-u runs the program it names"),
    ("git clone -c core.sshCommand=./x repo", "-c sets configuration that can name commands"),
    (
        "git clone --config core.sshCommand=./x repo",
        "--config sets configuration that can name commands",
    ),
    ("git rebase -x 'make test' main", "-x runs a command after each commit"),
    ("git rebase --exec ./x main", "--exec runs the program it names"),
    ("git grep -O foo", "-O runs a command"),
    ("git grep --open-files-in-pager=vim foo", "--open-files-in-pager runs a command"),
    ("git diff --output=/etc/passwd", "--output writes a file"),
    ("git log --output /tmp/x", "--output writes a file"),
    ("git format-patch -o /tmp HEAD~1", "-o writes files"),
    ("git archive -o a.tar HEAD", "-o writes a file"),
    ("git difftool -x ./x", "-x runs a command"),
    ("git difftool --extcmd=./x", "--extcmd runs a command"),
    ("git bisect run ./x", "run runs a command at each step"),
    ("git submodule foreach 'rm -rf .'", "foreach runs a command in each submodule"),
    (
        "git config core.fsmonitor ./x",
        "a value set in git's configuration can name commands git runs",
    ),
    (
        "git config set core.pager ./x",
        "set changes git's configuration, which can name commands git runs",
    ),
    (
        "git config --add alias.x '!sh'",
        "--add changes git's configuration, which can name commands git runs",
    ),
    ("awk '{ system(\"touch pwned\") }' f", "the awk script: its system() runs a command"),
    ("awk '{ print > \"out\" }' f", "the awk script: its print > writes a file"),
    ("awk -F: '{ print | \"sh\" }' f", "the awk script: its | runs a command"),
    ("awk -f prog.awk f", "-f reads its program from a file treadle has not read"),
    ("nawk 'BEGIN { system(\"x\") }'", "the awk script: its system() runs a command"),
    ("gawk -e 'BEGIN { system(\"x\") }'", "the awk script: its system() runs a command"),
    ("gawk --source='BEGIN { system(\"x\") }'", "the awk script: its system() runs a command"),
    ("gawk -l filefuncs '{ print }'", "-l loads compiled code"),
    ("gawk -i lib.awk '{ print }'", "-i includes a file treadle has not read"),
    ("gawk -o out.awk '{ print }'", "-o writes the program to a file"),
    ("gawk --profile=p '{ print }'", "--profile writes a profile to a file"),
    ("mawk '{ print > \"f\" }'", "the awk script: its print > writes a file"),
    (
        "less '+!touch pwned' f",
        "+!touch pwned runs its commands at the start, a shell command among them",
    ),
    ("less -o log f", "-o writes a file"),
    ("less --log-file=log f", "--log-file writes a file"),
    ("less -k keys f", "-k reads key bindings that can run commands"),
    ("vim -c '!touch pwned' f", "-c runs the Ex command it is given"),
    ("vi '+!sh' f", "+!sh runs the Ex command it is given"),
    ("nvim --cmd 'silent !x'", "--cmd runs the Ex command it is given"),
    ("vim -S evil.vim", "-S sources a script"),
    ("ex -c '!x' f", "-c runs the Ex command it is given"),
    ("view -u rc f", "-u reads a vimrc that can run commands"),
    ("man -P 'sh -c x' ls", "-P runs the pager it names"),
    ("man --pager=./x ls", "--pager runs the pager it names"),
    ("man -H ls", "-H runs a browser"),
    ("rsync -e ./x a b:", "-e runs the remote shell it names"),
    ("rsync -ae ./x a b:", "-e runs the remote shell it names"),
    ("rsync --rsh=./x a b:", "--rsh runs the remote shell it names"),
    ("rsync --rsync-path=./x a b:", "--rsync-path runs the program it names"),
    ("zip -T -TT './x' a.zip f", "-TT runs the command it names to test the archive"),
    (
        "zip --unzip-command=./x -T a.zip f",
        "--unzip-command runs the command it names to test the archive",
    ),
    ("sort -o out f", "-o writes a file"),
    ("sort -ro out f", "-o writes a file"),
    ("sort --output=out f", "--output writes a file"),
    ("sort --compress-program=./x f", "--compress-program runs the program it names"),
    ("tee out", "tee writes every file it is given"),
    ("tee -a ~/.bashrc", "tee writes every file it is given"),
    ("dd if=/dev/zero of=/dev/sda", "of=/dev/sda writes a file"),
    ("curl -o out https://x", "-o writes a file"),
    ("curl -sSLo out https://x", "-o writes a file"),
    ("curl -O https://x/f", "-O writes a file"),
    ("curl --output out https://x", "--output writes a file"),
    ("curl -c jar https://x", "-c writes a file"),
    ("curl -D h https://x", "-D writes a file"),
    ("curl -K cfg https://x", "-K reads options from a file treadle has not read"),
    ("curl --trace t https://x", "--trace writes a file"),
    ("wget -O out https://x", "-O writes a file"),
    ("wget -qO- https://x", "-O writes a file"),
    ("wget -o log https://x", "-o writes a file"),
    ("wget -e robots=off https://x", "-e runs a wgetrc command, which can write files"),
    ("wget --use-askpass=./x https://x", "--use-askpass runs a command"),
    ("make -f evil.mk", "-f reads a makefile treadle has not read"),
    ("make -C ../other test", "-C runs the makefile of another folder"),
    ("make --eval='x: ; touch pwned' x", "--eval evaluates make code, which can run commands"),
    ("make test SHELL=./x", "SHELL=./x sets a variable, which can change the commands make runs"),
    ("npm test --script-shell=./x", "--script-shell runs scripts in the shell it names"),
    (
        "npm test --node-options=--require=./x",
        "--node-options passes options to node, which can load code",
    ),
    ("pnpm test --script-shell=./x", "--script-shell runs scripts in the shell it names"),
    ("yarn test --script-shell=./x", "--script-shell runs scripts in the shell it names"),
    ("/usr/bin/find . -delete", "-delete deletes the files found"),
]


@pytest.mark.parametrize(("command", "why"), HAND_WRITTEN)
def test_a_command_that_runs_or_writes_is_named_with_its_reason(command, why):
    assert hazard(command) == why


def test_every_program_in_the_table_has_a_case_written_by_hand():
    covered = set()
    for command, _ in HAND_WRITTEN:
        words = shlex.split(command)
        program = words[0].rsplit("/", 1)[-1]
        covered |= {program, f"{program} {words[1]}"}
    assert set(HAZARDS) - covered == set()


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.py' -type f",
        "find . -executable",  # starts like -exec, finds executables
        "rg -e --pre foo",  # the pattern "--pre", searched for
        "rg foo src",
        "sed s/a/b/ f",
        "sed -n -e 's/i/x/p' f",
        "sed -es/i/x/ f",  # -e takes the rest: the i is the script's
        "sed -E 's/(a|b)/x/g' f",
        "tar -xf a.tar",
        "tar xzf a.tar.gz -C out",
        "git status -s",
        "git log --oneline -n 5",
        "git grep -c foo",  # -c counts in grep; it is clone's -c that configures
        "git config --get user.name",
        "git config user.name",
        "git diff --output-indicator-new=+",
        "git bisect good",
        "awk -F, '{ print $1 }' f",
        "awk '$3 > 100' f",
        "less f",
        "vim f",
        "man ls",
        "sort -k2 -t, f",
        "tee",
        "dd if=a",
        "curl -H 'X: o' https://x",
        "curl -sS https://x",
        "make test",
        "make -j4 test",
        "npm test",
        "ls -la $HOME",
        'find "$HOME" -name x',
        "cat *.py",  # not a program with hazards
    ],
)
def test_a_command_that_only_reads_is_not_named(command):
    assert hazard(command) == ""


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("find . $'\\x2dexec' touch pwned {} +", "it has an expansion treadle cannot read"),
        ("find . ${X:--exec} touch pwned {} +", "it has an expansion treadle cannot read"),
        ('find . "${X:--exec}" touch pwned {} +', "it has an expansion treadle cannot read"),
        ("find . -exe[c] touch pwned {} +", "it has a pattern that could expand to an option"),
        ("find . '-exe'? touch pwned {} +", "it has a pattern that could expand to an option"),
        ("rg foo *", "it has a pattern that could expand to an option"),
        (
            "find . {-exec,touch} pwned {} +",
            "it has a brace expansion, which makes other words",
        ),
        ("find . -{exec,x} pwned {} +", "it has a brace expansion, which makes other words"),
    ],
)
def test_a_spelling_bash_reads_otherwise_is_named(command, why):
    assert hazard(command) == why


@pytest.mark.parametrize(
    "command",
    [
        "find . -name '*.py'",
        'find . -name "*.py" -o -name "{a,b}"',
        "find src/*.py -type f",
        "find $HOME ${PWD} -name x",
        "rg foo src/*.py",
        "find . -name x -exec echo {} +",  # the placeholder is not a brace expansion
    ],
)
def test_quoted_patterns_and_plain_parameters_read_as_written(command):
    assert unread_spelling(command) == ""
