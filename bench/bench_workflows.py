"""A team's workflow files at start-up (issue 23): what finding 200 skills and 200
slash commands costs a session's start, against a repository with none (target: at
most 10 ms more).

The two repositories' runs are interleaved and the figure over none is the median of
the differences (on two cores shared by busy neighbours, a run of one after a run of the
other measured the load as much as the files). Each figure is a fresh process (the
imports the scan adds to a session are counted; the interpreter's start and what a
session imports anyway, as the file tools, are not): the time from importing the scan
to having the skills, the commands, the ``skill`` tool and the list offered in
the request, in a repository laid out as Claude Code's (``.claude/skills/NAME/SKILL.md``
and ``.claude/commands/NAME.md``, front matter as such files hold it).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SKILLS = 200
COMMANDS = 200
RUNS = 15
TARGET_MS = 10.0

PROGRAM = """
import sys, time
from treadle.entrypoints.config import AppConfig  # a session has these already
from treadle.domain.loop.settings import TurnSettings
from treadle.domain.loop.turn import core_tools
from treadle.adapters.tools import file_tools
from treadle.adapters.instructions import read_instructions
started = time.perf_counter()
from treadle.entrypoints.workflows import offer_skills, read_workflows, with_skill_tool
found = read_workflows(AppConfig(workspace=sys.argv[1]))
tools = with_skill_tool(core_tools(), found)
settings = offer_skills(TurnSettings(), found)
from treadle.domain.rules.skills import offer_skills as offer
text = offer(settings.skills, None).text
elapsed = time.perf_counter() - started
assert len(found.skills) == int(sys.argv[2]) and len(found.commands) == int(sys.argv[3]), found
print(elapsed)
"""


def _repository(root: Path, skills: int, commands: int) -> Path:
    (root / ".git").mkdir(parents=True)
    for number in range(skills):
        folder = root / ".claude" / "skills" / f"skill-{number:03}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{number:03}\ndescription: Does task {number} the team's way; "
            "use it when asked for that task.\n---\n# Steps\n\n" + "1. Do a step.\n" * 40
        )
        (folder / "reference.md").write_text("More detail.\n" * 20)
    folder = root / ".claude" / "commands"
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(commands):
        (folder / f"command-{number:03}.md").write_text(
            f"---\ndescription: Runs chore {number}\nargument-hint: FILE\n---\n"
            "Do the chore on $1 and report.\n"
        )
    return root


def _start_up(workspace: Path, skills: int, commands: int, env: dict[str, str]) -> float:
    """The seconds of the scan in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(workspace), str(skills), str(commands)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-800:])
    return float(done.stdout)


def run() -> list[str]:
    with tempfile.TemporaryDirectory(prefix="treadle-bench-workflows-") as folder:
        base = Path(folder)
        env = {
            **os.environ,
            "TREADLE_CONFIG_DIR": str(base / "config"),
            "HOME": str(base / "home"),
        }
        empty = _repository(base / "none", 0, 0)
        full = _repository(base / "full", SKILLS, COMMANDS)
        _start_up(full, SKILLS, COMMANDS, env)  # the files in the page cache, as at a start
        nones: list[float] = []
        manys: list[float] = []
        for _ in range(RUNS):  # interleaved, so load on the machine hits both alike
            nones.append(_start_up(empty, 0, 0, env))
            manys.append(_start_up(full, SKILLS, COMMANDS, env))
    none, many = statistics.median(nones), statistics.median(manys)
    over = statistics.median(m - n for m, n in zip(manys, nones, strict=True)) * 1e3
    ok = "ok" if over <= TARGET_MS else "MISSED"
    return [
        f"workflow files at start-up: {none * 1e3:.2f} ms with none, {many * 1e3:.2f} ms with "
        f"{SKILLS} skills and {COMMANDS} commands = {over:+.2f} ms "
        f"(target <= {TARGET_MS:g} ms more: {ok})"
    ]


if __name__ == "__main__":
    for line in run():
        print(line)
