"""The transcript and the session store: the TranscriptStore port (a JSONL file
written through), the sessions' folders and meta, their log, recording, replay and forks."""
