"""What treadle does on the host as a turn starts: record the workspace, warn once.

:class:`HostTurnStart` implements the TurnStart port. Before each main turn it records
a checkpoint of the workspace in its shadow repository (in a thread: the first one of
a big tree hashes every file), and it says, once a session, what the person should
know: that commands cannot be confined on this kernel, that some files are not
recorded. A notice shown once is not repeated on every turn.

Example::

    turn_start = HostTurnStart(shadow_for(state, workspace), session="2025…", sandbox=sandbox)
    agent = Agent(TurnPorts(model, clock, runner, terminal, turn_start=turn_start))
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from returns.result import Failure, Result, Success

from treadle.domain.values.events import Notice
from treadle.domain.values.text import one_line

if TYPE_CHECKING:
    from treadle.adapters.checkpoints import Checkpoint, ShadowRepository
    from treadle.adapters.sandbox import Sandbox


class HostTurnStart:
    """A checkpoint before each turn of session ``session``, and the sandbox's warning."""

    def __init__(
        self,
        shadow: ShadowRepository | Callable[[], ShadowRepository] | None,
        *,
        session: str = "",
        sandbox: Sandbox | None = None,
    ) -> None:
        self._shadow = shadow
        self.session = session
        self.sandbox = sandbox
        self._shown: set[str] = set()

    async def before_turn(self, task: str) -> Sequence[Notice]:
        notices: list[Notice] = []
        if self.sandbox is not None and self.sandbox.warning:
            notices.append(Notice("sandbox_unavailable", self.sandbox.warning))
        if self._shadow is not None:
            label = one_line(task, 100)
            recorded = await asyncio.to_thread(self._record, label)
            match recorded:
                case Success(checkpoint):
                    notices += [Notice("checkpoint_partial", n) for n in checkpoint.notices]
                case Failure(why):
                    notices.append(Notice("checkpoint_skipped", why))
        fresh = [notice for notice in notices if notice.text not in self._shown]
        self._shown.update(notice.text for notice in fresh)
        return fresh

    @property
    def shadow(self) -> ShadowRepository | None:
        """The shadow repository, made the first time it is needed (a factory given to
        the constructor defers its import to the first checkpoint)."""
        if callable(self._shadow):  # a repository itself is not callable
            self._shadow = self._shadow()
        return self._shadow

    def _record(self, label: str) -> Result[Checkpoint, str]:
        shadow = self.shadow
        assert shadow is not None
        return shadow.record(session=self.session, task=label)
