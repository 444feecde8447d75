"""What treadle does on the host as a turn starts: record the workspace, warn once.

:class:`HostTurnStart` implements the TurnStart port. Before each main turn it records
a checkpoint of the workspace in its shadow repository (in a thread: the first one of
a big tree hashes every file), and it says, once a session, what the person should
know: that commands cannot be confined on this kernel, that some files are not
recorded. A notice shown once is not repeated on every turn.

The sandbox and the shadow repository may be given as factories: they are then made,
and their modules imported, in that thread, while the first request is on its way
(see ``treadle.entrypoints.NOT_BEFORE_FIRST_REQUEST``).

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
        sandbox: Sandbox | Callable[[], Sandbox] | None = None,
    ) -> None:
        self._shadow = shadow
        self.session = session
        self._sandbox = sandbox
        self._shown: set[str] = set()

    async def before_turn(self, task: str) -> Sequence[Notice]:
        warning, recorded = await asyncio.to_thread(self._on_host, one_line(task, 100))
        notices: list[Notice] = []
        if warning:
            notices.append(Notice("sandbox_unavailable", warning))
        match recorded:
            case Success(checkpoint):
                notices += [Notice("checkpoint_partial", n) for n in checkpoint.notices]
            case Failure(why):
                notices.append(Notice("checkpoint_skipped", why))
        fresh = [notice for notice in notices if notice.text not in self._shown]
        self._shown.update(notice.text for notice in fresh)
        return fresh

    @property
    def sandbox(self) -> Sandbox | None:
        """The session's sandbox, made the first time it is needed (as the shadow is)."""
        if callable(self._sandbox):  # a sandbox itself is not callable
            self._sandbox = self._sandbox()
        return self._sandbox

    @property
    def shadow(self) -> ShadowRepository | None:
        """The shadow repository, made the first time it is needed (a factory given to
        the constructor defers its import to the first checkpoint)."""
        if callable(self._shadow):  # a repository itself is not callable
            self._shadow = self._shadow()
        return self._shadow

    def _on_host(self, label: str) -> tuple[str, Result[Checkpoint, str] | None]:
        """In the thread: the sandbox's warning (probing the kernel), the checkpoint."""
        sandbox = self.sandbox
        warning = sandbox.warning if sandbox is not None else ""
        shadow = self.shadow
        recorded = None if shadow is None else shadow.record(session=self.session, task=label)
        return warning, recorded
