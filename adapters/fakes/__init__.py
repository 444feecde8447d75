"""Deterministic fakes of every port, shipped for library users and tests alike.

Example::

    from treadle.adapters.fakes import FakeClock, FakeRunner, RecordingTerminal, ScriptedModel
    from treadle.adapters.fakes import ScriptedResponse as R

    model = ScriptedModel([R.calling("bash", command="ls"), R.saying("Done.")])
"""

from treadle.adapters.fakes.clock import FakeClock
from treadle.adapters.fakes.model import FakeWindow, ScriptedModel, ScriptedResponse
from treadle.adapters.fakes.runner import FakeProcess, FakeRunner
from treadle.adapters.fakes.terminal import RecordingTerminal

__all__ = [
    "FakeClock",
    "FakeProcess",
    "FakeRunner",
    "FakeWindow",
    "RecordingTerminal",
    "ScriptedModel",
    "ScriptedResponse",
]
