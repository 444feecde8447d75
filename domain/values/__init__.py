"""The nouns of a turn: messages, tool calls, usage, requests and their failures, events,
and how a turn ends. Frozen values and closed unions; they import nothing but each other."""
