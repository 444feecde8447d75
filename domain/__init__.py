"""The pure core, in three layers: ``values`` (the nouns of a turn), ``rules`` (the
decisions, as pure functions of values) and ``loop`` (which drives the ports with the
rules). No I/O of its own: the world is reached through :mod:`treadle.ports`.

Bugs are logged under the ``treadle`` logger, which stays silent until a program gives
it a handler (the command line writes the session's ``treadle.log``).
"""

import logging

logging.getLogger("treadle").addHandler(logging.NullHandler())
