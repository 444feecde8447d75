"""Running shell commands for real: :class:`SubprocessRunner` implements the ProcessRunner port."""

from treadle.adapters.process.runner import SubprocessRunner
from treadle.adapters.process.tree import kill_every_command_now

__all__ = ["SubprocessRunner", "kill_every_command_now"]
