"""The decisions of a turn as pure functions of values: retries, truncation, approval,
arguments, output bounds, the history's invariants, resuming from a record."""
