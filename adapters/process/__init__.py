"""Running shell commands for real: :class:`SubprocessRunner` implements the ProcessRunner port."""

from treadle.adapters.process.runner import SubprocessRunner

__all__ = ["SubprocessRunner"]
