"""treadle: a terminal coding agent whose turn loop runs on ports you can swap.

The distribution exposes one namespace: ``treadle.domain`` (the pure core),
``treadle.ports`` (the interfaces and the values that cross them),
``treadle.adapters`` (real and fake implementations) and ``treadle.entrypoints``
(the command line and the container that wires it).
"""

__version__ = "0.1.0"
