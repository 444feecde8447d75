"""Deterministic fakes of every port, shipped for library users and tests alike.

Example::

    from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal, ScriptedModel
    from treadle.adapters.fakes import ScriptedResponse as R

    model = ScriptedModel([R.calling("bash", command="ls"), R.saying("Done.")])
"""

from treadle.adapters.fakes.clock import FakeClock
from treadle.adapters.fakes.hooks import RecordingNotifier, ScriptedHooks
from treadle.adapters.fakes.model import ScriptedModel, ScriptedResponse
from treadle.adapters.fakes.runner import FakeProcess, FakeRunner
from treadle.adapters.fakes.terminal import RecordingTerminal, SilentTerminal
from treadle.adapters.fakes.transcript import MemoryTranscript
from treadle.adapters.fakes.window import FakeWindow

__all__ = [
    "FakeClock",
    "FakeProcess",
    "FakeRunner",
    "FakeWindow",
    "MemoryTranscript",
    "RecordingNotifier",
    "RecordingTerminal",
    "ScriptedHooks",
    "ScriptedModel",
    "ScriptedResponse",
    "SilentTerminal",
]
