"""The environment a command runs in: the user's, minus what looks like a secret."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
"""A variable whose name contains one of these (any case) is not passed on."""

_SECRET_NAME = re.compile("|".join(SECRET_WORDS), re.IGNORECASE)

NON_INTERACTIVE = {
    "CI": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
}
"""Nothing the command starts should wait for a person: stdin is closed anyway."""

RUN_MARKER_PREFIX = "TREADLE_RUN_"
"""Every run tags its environment with ``TREADLE_RUN_<id>=1``; descendants inherit it,
so cleanup can find the ones that left the process group. A name per run (rather than
one variable) keeps the tags of an enclosing treadle run too."""


def looks_secret(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


def run_marker(run_id: str) -> str:
    return f"{RUN_MARKER_PREFIX}{run_id}"


def child_environment(
    inherited: Mapping[str, str],
    *,
    passthrough: Collection[str],
    extra: Mapping[str, str],
    run_id: str,
    owner: str = "",
) -> dict[str, str]:
    """``inherited`` without secrets (unless let through), the non-interactive settings,
    then ``extra`` (the caller's own choices win), then the run's and owner's markers."""
    environment = {
        name: value
        for name, value in inherited.items()
        if (name in passthrough or not looks_secret(name)) and name != "PWD"
    }
    environment.update(NON_INTERACTIVE)
    environment.update(extra)
    environment[run_marker(run_id)] = "1"
    if owner:
        environment[owner] = "1"
    return environment
