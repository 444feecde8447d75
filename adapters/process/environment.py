"""The environment a command runs in: the user's, minus what looks like a secret.

What looks like a secret is :mod:`treadle.adapters.secrets.secret_names`' rule, the one the
redactor keeps out of transcripts and the screen too.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from treadle.adapters.secrets.secret_names import is_secret, looks_secret

NON_INTERACTIVE = {
    "CI": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
}
"""Nothing the command starts should wait for a person: stdin is closed anyway."""

__all__ = [
    "NON_INTERACTIVE",
    "RUN_MARKER_PREFIX",
    "child_environment",
    "looks_secret",
    "run_marker",
]

RUN_MARKER_PREFIX = "TREADLE_RUN_"
"""Every run tags its environment with ``TREADLE_RUN_<id>=1``; descendants inherit it,
so cleanup can find the ones that left the process group. A name per run (rather than
one variable) keeps the tags of an enclosing treadle run too."""


def run_marker(run_id: str) -> str:
    return f"{RUN_MARKER_PREFIX}{run_id}"


_verdicts: dict[tuple[str, str], bool] = {}
_VERDICTS_KEPT = 4096


def _secret(name: str, value: str) -> bool:
    """:func:`is_secret`, remembered: every command asks it of the same variables."""
    verdict = _verdicts.get((name, value))
    if verdict is None:
        if len(_verdicts) >= _VERDICTS_KEPT:
            _verdicts.clear()
        verdict = _verdicts[name, value] = is_secret(name, value)
    return verdict


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
        if (name in passthrough or not _secret(name, value)) and name != "PWD"
    }
    environment.update(NON_INTERACTIVE)
    environment.update(extra)
    environment[run_marker(run_id)] = "1"
    if owner:
        environment[owner] = "1"
    return environment
