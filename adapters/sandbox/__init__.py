"""Commands the kernel confines: Landlock rulesets built here, enforced by the spawner.

:class:`Sandbox` is what the process runner asks how to start each command.
"""

from treadle.adapters.sandbox.confinement import UNCONFINED, Launch, Sandbox
from treadle.adapters.sandbox.landlock import probe

__all__ = ["UNCONFINED", "Launch", "Sandbox", "probe"]
