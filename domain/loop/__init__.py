"""The loop that drives the ports with the rules: one turn, one answer, sub-agents, stops."""
