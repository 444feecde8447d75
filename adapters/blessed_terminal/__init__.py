"""The Terminal port on a real terminal: the full display, Esc, prompts (blessed).

Example::

    from treadle.adapters.blessed_terminal import BlessedTerminal

    terminal = BlessedTerminal(resume_hint=" — resume with: treadle --resume ID")
"""

from treadle.adapters.blessed_terminal.terminal import BlessedTerminal

__all__ = ["BlessedTerminal"]
