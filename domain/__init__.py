"""The pure core: the turn loop and the decisions it makes, with no I/O of its own."""
