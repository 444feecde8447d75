"""The Terminal port for an editor over the Agent Client Protocol (``treadle acp``)."""
